// Config loading: schema defaults, the embedded default run, YAML merges, command-line
// overrides in both forms, every error kind and its message, and --print_config round trips.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "athanor/cli/athanor_schema.h"
#include "athanor/cli/config.h"

namespace ath::cli {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// A scratch file removed at the end of the test.
class TempFile {
 public:
  explicit TempFile(const std::string& text, const std::string& name = "run.yaml") {
    static int counter = 0;
    dir_ = fs::temp_directory_path() /
           ("athanor_cli_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(dir_);
    path_ = (dir_ / name).string();
    std::ofstream(path_) << text;
  }
  ~TempFile() { fs::remove_all(dir_); }
  const std::string& path() const { return path_; }

 private:
  fs::path dir_;
  std::string path_;
};

const Schema& schema() {
  static const Schema s = athanor_schema();
  return s;
}

json resolve(const std::vector<std::string>& files, const std::vector<std::string>& args,
             bool use_default = false) {
  return resolve_config(schema(), use_default ? default_config_yaml() : "", files,
                        parse_overrides(args));
}

// The ConfigError message of `fn`, or "" when it does not throw one.
template <class F>
std::string error_of(F&& fn) {
  try {
    fn();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(CliConfig, SchemaDefaults) {
  const json d = schema().defaults();
  EXPECT_EQ(d["seed_everything"], 0);
  EXPECT_TRUE(d["trainer"]["max_epochs"].is_null());
  EXPECT_EQ(d["trainer"]["max_steps"], -1);
  EXPECT_TRUE(d["trainer"]["limit_train_batches"].is_number_float());
  EXPECT_EQ(d["trainer"]["num_sanity_val_steps"], 2);
  EXPECT_EQ(d["trainer"]["gradient_clip_algorithm"], "norm");
  EXPECT_EQ(d["trainer"]["default_root_dir"], "runs");
  EXPECT_EQ(d["trainer"]["callbacks"], json::array());
  EXPECT_EQ(d["model"]["resnet"]["layers"], json::array({2, 2, 2, 2}));
  EXPECT_EQ(d["data"]["batch_size"], 64);
  EXPECT_TRUE(d["ckpt_path"].is_null());
  // The sections and nothing else at the top level.
  std::vector<std::string> top;
  for (auto it = d.begin(); it != d.end(); ++it) top.push_back(it.key());
  EXPECT_EQ(top,
            (std::vector<std::string>{"ckpt_path", "data", "model", "seed_everything", "trainer"}));
}

TEST(CliConfig, EmbeddedDefaultRun) {
  const json c = resolve({}, {}, true);
  EXPECT_EQ(c["trainer"]["max_epochs"], 3);
  EXPECT_EQ(c["model"]["name"], "fashion_cnn");
  EXPECT_EQ(c["model"]["optimizer"], "adam");
  EXPECT_DOUBLE_EQ(c["model"]["lr"].get<double>(), 1e-3);
  EXPECT_EQ(c["data"]["name"], "fashion-mnist");
  ASSERT_EQ(c["trainer"]["callbacks"].size(), 2u);
  const json& ckpt = c["trainer"]["callbacks"][0];
  EXPECT_EQ(ckpt["class_path"], "ModelCheckpoint");
  EXPECT_EQ(ckpt["init_args"]["monitor"], "val_acc");
  EXPECT_EQ(ckpt["init_args"]["mode"], "max");
  EXPECT_EQ(ckpt["init_args"]["save_top_k"], 1);  // filled in from the class's defaults
  EXPECT_TRUE(ckpt["init_args"]["dirpath"].is_null());
  // A --config replaces the embedded run: only the schema's defaults lie under it.
  TempFile f("model:\n  name: fashion_mlp\n");
  const json d = resolve_config(schema(), default_config_yaml(), {f.path()}, {});
  EXPECT_TRUE(d["trainer"]["max_epochs"].is_null());
  EXPECT_EQ(d["trainer"]["callbacks"], json::array());
}

TEST(CliConfig, YamlMergesOverDefaultsAndEarlierFiles) {
  TempFile a(R"(
trainer:
  max_epochs: 5
  limit_train_batches: 10      # an int: a batch count
  limit_val_batches: 0.25      # a float: a fraction
  callbacks:
  - EarlyStopping
model:
  lr: 1          # an integer where a float is expected is fine
  resnet:
    width: 8
data:
  root: 2024     # a string key keeps the text
)");
  TempFile b(R"(
trainer:
  max_epochs: 7
  callbacks:
  - class_path: lightning.pytorch.callbacks.ModelCheckpoint
    init_args: {monitor: val_loss, save_top_k: 3}
model:
)");
  const json c = resolve({a.path(), b.path()}, {});
  EXPECT_EQ(c["trainer"]["max_epochs"], 7);
  EXPECT_EQ(c["trainer"]["limit_train_batches"], 10);
  EXPECT_TRUE(c["trainer"]["limit_train_batches"].is_number_integer());
  EXPECT_TRUE(c["trainer"]["limit_val_batches"].is_number_float());
  EXPECT_TRUE(c["model"]["lr"].is_number_float());
  EXPECT_EQ(c["model"]["lr"].get<double>(), 1.0);
  EXPECT_EQ(c["model"]["resnet"]["width"], 8);
  EXPECT_EQ(c["model"]["resnet"]["small_input"], true);  // untouched sibling
  EXPECT_EQ(c["data"]["root"], "2024");
  // Lists replace: b's callbacks, not a's plus b's.
  ASSERT_EQ(c["trainer"]["callbacks"].size(), 1u);
  EXPECT_EQ(c["trainer"]["callbacks"][0]["class_path"], "ModelCheckpoint");
  EXPECT_EQ(c["trainer"]["callbacks"][0]["init_args"]["save_top_k"], 3);
  EXPECT_EQ(c["trainer"]["callbacks"][0]["init_args"]["monitor"], "val_loss");
  // The bare name in a takes the class's defaults.
  const json only_a = resolve({a.path()}, {});
  EXPECT_EQ(only_a["trainer"]["callbacks"][0]["init_args"]["patience"], 3);
}

TEST(CliConfig, OverridesInBothForms) {
  const json c =
      resolve({}, {"--trainer.max_epochs=3", "--model.lr", "1e-2", "--model.optimizer", "sgd",
                   "--trainer.fast_dev_run=true", "--data.root=1.10", "--ckpt_path=last",
                   "--trainer.callbacks=[EarlyStopping]", "--trainer.gradient_clip_val", "0.5",
                   "--seed_everything=-3", "--trainer.limit_test_batches=4"});
  EXPECT_EQ(c["trainer"]["max_epochs"], 3);
  EXPECT_DOUBLE_EQ(c["model"]["lr"].get<double>(), 1e-2);
  EXPECT_EQ(c["model"]["optimizer"], "sgd");
  EXPECT_EQ(c["trainer"]["fast_dev_run"], true);
  EXPECT_EQ(c["data"]["root"], "1.10");
  EXPECT_EQ(c["ckpt_path"], "last");
  EXPECT_EQ(c["trainer"]["callbacks"][0]["class_path"], "EarlyStopping");
  EXPECT_DOUBLE_EQ(c["trainer"]["gradient_clip_val"].get<double>(), 0.5);
  EXPECT_EQ(c["seed_everything"], -3);
  EXPECT_EQ(c["trainer"]["limit_test_batches"], 4);
  // A later override wins; null clears a nullable key; a section takes a mapping.
  const json d = resolve(
      {}, {"--ckpt_path=best", "--ckpt_path", "null",
           "--trainer={max_epochs: 9, deterministic: true}", "--trainer.fast_dev_run", "2"});
  EXPECT_TRUE(d["ckpt_path"].is_null());
  EXPECT_EQ(d["trainer"]["max_epochs"], 9);
  EXPECT_EQ(d["trainer"]["deterministic"], true);
  EXPECT_EQ(d["trainer"]["fast_dev_run"], 2);
  // Overrides apply over the files.
  TempFile f("trainer:\n  max_epochs: 5\n");
  EXPECT_EQ(resolve({f.path()}, {"--trainer.max_epochs=6"})["trainer"]["max_epochs"], 6);
}

// A huge unknown key costs no edit-distance table per candidate (found by fuzz_config): keys far
// longer than any known one are compared by length alone.
TEST(CliConfig, HugeUnknownKeyIsRefusedQuickly) {
  const std::string key(1 << 20, 'k');
  EXPECT_NE(error_of([&] { resolve({}, {"--trainer." + key + "=1"}); }).find("unknown key"),
            std::string::npos);
}

// Strings that are not UTF-8 are refused where they enter, in a file or an argument: JSON, the
// printed config and messages all need UTF-8 (found by fuzz_config: --print_config aborted).
TEST(CliConfig, StringsMustBeUtf8) {
  TempFile f("data:\n  root: \"ab\xf8\"\n");
  EXPECT_NE(error_of([&] { resolve({f.path()}, {}); }).find(":2: a YAML string is not valid UTF-8"),
            std::string::npos);
  EXPECT_NE(error_of([] { resolve({}, {"--data.root=ab\xc3"}); }).find("is not valid UTF-8"),
            std::string::npos);
  EXPECT_NE(error_of([] { resolve({}, {"--trainer={\"k\xff\": 1}"}); }).find("not valid UTF-8"),
            std::string::npos);
}

TEST(CliConfig, UnknownKeysSuggestTheClosest) {
  TempFile f("trainer:\n  max_epoch: 3\n");
  EXPECT_EQ(
      error_of([&] { resolve({f.path()}, {}); }),
      "unknown key 'trainer.max_epoch' in " + f.path() + ":2; did you mean 'trainer.max_epochs'?");
  EXPECT_EQ(error_of([] { resolve({}, {"--trainer.max_epoch=3"}); }),
            "unknown key 'trainer.max_epoch' in argument '--trainer.max_epoch=3'; did you mean "
            "'trainer.max_epochs'?");
  // The same name in another section, a misspelled section, transpositions.
  EXPECT_NE(
      error_of([] { resolve({}, {"--max_epochs=3"}); }).find("did you mean 'trainer.max_epochs'?"),
      std::string::npos);
  EXPECT_NE(error_of([] {
              resolve({}, {"--model.batch_size=3"});
            }).find("did you mean 'data.batch_size'?"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              resolve({}, {"--trainr.max_epochs=3"});
            }).find("did you mean 'trainer.max_epochs'?"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              resolve({}, {"--data.bacth_size=3"});
            }).find("did you mean 'data.batch_size'?"),
            std::string::npos);
  // Nothing close: no suggestion.
  const std::string far = error_of([] { resolve({}, {"--model.zzzzzzzz=3"}); });
  EXPECT_NE(far.find("unknown key 'model.zzzzzzzz'"), std::string::npos);
  EXPECT_EQ(far.find("did you mean"), std::string::npos) << far;
  TempFile top("trianer:\n  max_epochs: 3\n");
  EXPECT_NE(error_of([&] { resolve({top.path()}, {}); }).find("did you mean 'trainer'?"),
            std::string::npos);
}

TEST(CliConfig, WrongTypesNameTheKeyAndValue) {
  TempFile f("seed_everything: 1\ntrainer:\n  max_epochs: three\n");
  EXPECT_EQ(error_of([&] { resolve({f.path()}, {}); }),
            f.path() + ":3: trainer.max_epochs: expected an integer, got 'three'");
  EXPECT_EQ(error_of([] { resolve({}, {"--trainer.max_epochs=three"}); }),
            "argument '--trainer.max_epochs=three': trainer.max_epochs: expected an integer, got "
            "'three'");
  EXPECT_NE(error_of([] {
              resolve({}, {"--trainer.deterministic=maybe"});
            }).find("expected a boolean (true or false), got 'maybe'"),
            std::string::npos);
  EXPECT_NE(error_of([] { resolve({}, {"--model.lr=fast"}); }).find("expected a number"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              resolve({}, {"--trainer.max_epochs=2.5"});
            }).find("expected an integer, got '2.5'"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              resolve({}, {"--trainer.max_steps=null"});
            }).find("trainer.max_steps: expected an integer, got null"),
            std::string::npos);
  EXPECT_NE(error_of([] { resolve({}, {"--trainer.max_epochs=[1, 2]"}); }).find("got a list"),
            std::string::npos);
  EXPECT_NE(
      error_of([] { resolve({}, {"--trainer=3"}); }).find("trainer: expected a mapping, got '3'"),
      std::string::npos);
  // Range and format checks.
  EXPECT_NE(error_of([] {
              resolve({}, {"--trainer.limit_train_batches=1.5"});
            }).find("expected a fraction in [0, 1], got 1.5"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              resolve({}, {"--trainer.max_time=3h"});
            }).find("expected DD:HH:MM:SS, got '3h'"),
            std::string::npos);
  EXPECT_EQ(resolve({}, {"--trainer.max_time=00:01:30:00"})["trainer"]["max_time"], "00:01:30:00");
  EXPECT_NE(error_of([] { resolve({}, {"--data.batch_size=0"}); }).find("expected a value >= 1"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              resolve({}, {"--model.resnet.layers=[2, 2]"});
            }).find("expected a list of 4 positive integers"),
            std::string::npos);
}

TEST(CliConfig, InvalidChoicesListTheChoices) {
  EXPECT_EQ(error_of([] { resolve({}, {"--model.optimizer=adan"}); }),
            "argument '--model.optimizer=adan': model.optimizer: invalid choice 'adan' (choose "
            "from 'sgd', 'adam', 'adamw'); did you mean 'adam'?");
  TempFile f("data:\n  name: cifar\n");
  const std::string e = error_of([&] { resolve({f.path()}, {}); });
  EXPECT_NE(e.find(f.path() + ":2: data.name: invalid choice 'cifar' (choose from "
                              "'fashion-mnist', 'mnist-folder', 'text', 'csv')"),
            std::string::npos)
      << e;
}

TEST(CliConfig, CallbackClassesAndInitArgsAreChecked) {
  const std::string cls = error_of([] { resolve({}, {"--trainer.callbacks=[ModelCheckpont]"}); });
  EXPECT_NE(cls.find("trainer.callbacks[0]: unknown class 'ModelCheckpont'; did you mean "
                     "'ModelCheckpoint'? (known: ModelCheckpoint, EarlyStopping"),
            std::string::npos)
      << cls;
  TempFile f(R"(trainer:
  callbacks:
  - class_path: EarlyStopping
    init_args:
      moniter: val_loss
)");
  EXPECT_EQ(error_of([&] { resolve({f.path()}, {}); }),
            "unknown init_args key 'moniter' for EarlyStopping in " + f.path() +
                ":5; did you mean 'monitor'?");
  EXPECT_NE(error_of([] {
              resolve({}, {"--trainer.callbacks=[{class_path: EarlyStopping, init_args: "
                           "{patience: soon}}]"});
            }).find("trainer.callbacks[0].init_args.patience: expected an integer, got 'soon'"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              resolve({}, {"--trainer.callbacks=[{class_path: EarlyStopping, mode: max}]"});
            }).find("unknown key 'trainer.callbacks[0].mode'"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              resolve({}, {"--trainer.callbacks=[{init_args: {}}]"});
            }).find("missing class_path"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              resolve({}, {"--trainer.callbacks=[{class_path: EarlyStopping, init_args: "
                           "{mode: up}}]"});
            }).find("invalid choice 'up' (choose from 'min', 'max')"),
            std::string::npos);
  // A custom class list: the schema accepts what it is given.
  const Schema s = athanor_schema(
      {ClassSpec{.name = "MyCallback",
                 .help = "mine",
                 .init_args = {{.path = "every", .default_value = 2, .help = "how often"}}}});
  json c = s.defaults();
  apply_override(s, c, {"trainer.callbacks", "[MyCallback]", "--trainer.callbacks=[MyCallback]"});
  EXPECT_EQ(c["trainer"]["callbacks"][0]["init_args"]["every"], 2);
  EXPECT_THROW(apply_override(s, c, {"trainer.callbacks", "[EarlyStopping]", "x"}), ConfigError);
}

TEST(CliConfig, FileAndSyntaxErrors) {
  const std::string missing = error_of([] { resolve({"/nonexistent/run.yaml"}, {}); });
  EXPECT_NE(missing.find("cannot read config file '/nonexistent/run.yaml'"), std::string::npos);
  TempFile bad("trainer:\n  max_epochs: [1, 2\n");
  const std::string e = error_of([&] { resolve({bad.path()}, {}); });
  EXPECT_NE(e.find(bad.path() + ":"), std::string::npos) << e;
  EXPECT_NE(e.find("malformed YAML"), std::string::npos) << e;
  TempFile not_map("- a\n- b\n");
  EXPECT_NE(error_of([&] {
              resolve({not_map.path()}, {});
            }).find("the config: expected a mapping, got a list"),
            std::string::npos);
  TempFile empty("");
  EXPECT_EQ(resolve({empty.path()}, {}), schema().defaults());
  // Malformed command lines.
  EXPECT_NE(error_of([] { parse_overrides({"--trainer.max_epochs"}); }).find("expects a value"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_overrides({"stray"}); }).find("unexpected argument 'stray'"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_overrides({"--=3"}); }).find("unexpected argument"),
            std::string::npos);
  EXPECT_NE(error_of([] { resolve({}, {"--model.resnet.layers=[1, 2"}); }).find("malformed YAML"),
            std::string::npos);
  // Errors derive from ValueError, so generic handlers catch them too.
  EXPECT_THROW(resolve({}, {"--nope=1"}), ValueError);
}

// Aliases make yaml-cpp's nodes a graph: a self-referencing alias was unbounded recursion
// (SIGSEGV) and nested aliases ("billion laughs") an uncaught std::bad_alloc.
TEST(CliConfig, HostileAliasesAreConfigErrors) {
  TempFile cycle("model:\n  betas: &x [*x]\n");
  const std::string c = error_of([&] { resolve({cycle.path()}, {}); });
  EXPECT_NE(c.find(cycle.path() + ": a YAML alias refers to a node that contains it"),
            std::string::npos)
      << c;
  EXPECT_NE(error_of([] { resolve({}, {"--model.betas=&x [1, *x]"}); }).find("(a cycle)"),
            std::string::npos);
  std::string laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char k = 'b'; k <= 'j'; ++k) {  // 10^10 nodes once expanded
    std::string refs;
    for (int i = 0; i < 10; ++i) refs += fmt::format("{}*{}", i ? ", " : "", char(k - 1));
    laughs += fmt::format("{}: &{} [{}]\n", k, k, refs);
  }
  TempFile bomb(laughs);
  const std::string b = error_of([&] { resolve({bomb.path()}, {}); });
  EXPECT_NE(b.find("expands to more than 1000000 nodes"), std::string::npos) << b;
  EXPECT_THROW(yaml_to_json(laughs), ConfigError);
  std::string deep(200, '[');
  deep += std::string(200, ']');
  EXPECT_NE(error_of([&] { resolve({}, {"--model.betas=" + deep}); }).find("deeper than 64"),
            std::string::npos);
  // Aliases to complete nodes elsewhere are fine.
  EXPECT_EQ(yaml_to_json("a: &v [1, 2]\nb: *v\n")["b"], json({1, 2}));
}

TEST(CliConfig, PrintConfigRoundTrips) {
  for (bool comments : {false, true}) {
    const json c = resolve(
        {},
        {"--data.root=null", "--data.path=yes", "--model.lr=0.5", "--trainer.limit_val_batches=1.0",
         "--ckpt_path=a: b #c", "--trainer.max_time=01:00:00:00", "--data.target=3",
         "--trainer.callbacks=[EarlyStopping, {class_path: Timer}]"},
        true);
    const std::string yaml = to_yaml(schema(), c, comments);
    json back = schema().defaults();
    merge_yaml(schema(), back, yaml, "<printed>");
    EXPECT_EQ(back, c) << yaml;
    EXPECT_EQ(yaml.find("# Stop after this many epochs") != std::string::npos, comments) << yaml;
  }
  const std::string yaml = to_yaml(schema(), resolve({}, {}, true));
  // Schema order, floats keep their point, strings that look like other types are quoted.
  EXPECT_EQ(yaml.rfind("seed_everything: 0\ntrainer:\n  max_epochs: 3\n", 0), 0u) << yaml;
  EXPECT_NE(yaml.find("  limit_train_batches: 1.0\n"), std::string::npos);
  EXPECT_NE(yaml.find("  callbacks:\n  - class_path: ModelCheckpoint\n    init_args:\n"
                      "      dirpath: null\n"),
            std::string::npos)
      << yaml;
  EXPECT_NE(yaml.find("  betas:\n  - 0.9\n  - 0.999\n"), std::string::npos) << yaml;
  const std::string quoted = to_yaml(schema(), resolve({}, {"--data.root=null", "--data.path=3"}));
  EXPECT_NE(quoted.find("  root: \"null\"\n"), std::string::npos) << quoted;
  EXPECT_NE(quoted.find("  path: \"3\"\n"), std::string::npos) << quoted;
}

TEST(CliConfig, YamlToJson) {
  const json j = yaml_to_json("a: [1, 2.0, '3', ~, true, .inf]\nb: {c: x}\n");
  EXPECT_EQ(j["a"][0], 1);
  EXPECT_TRUE(j["a"][1].is_number_float());
  EXPECT_EQ(j["a"][2], "3");
  EXPECT_TRUE(j["a"][3].is_null());
  EXPECT_EQ(j["a"][4], true);
  EXPECT_TRUE(std::isinf(j["a"][5].get<double>()));
  EXPECT_EQ(j["b"]["c"], "x");
  EXPECT_THROW(yaml_to_json("a: [1"), FormatError);
}

TEST(CliSchema, AddRejectsInconsistentKeys) {
  Schema s;
  s.add({.path = "a.b", .default_value = 1, .help = ""});
  EXPECT_THROW(s.add({.path = "a.b", .default_value = 2, .help = ""}), ValueError);
  EXPECT_THROW(s.add({.path = "a", .default_value = 2, .help = ""}), ValueError);
  EXPECT_THROW(s.add({.path = "a.b.c", .default_value = 2, .help = ""}), ValueError);
  EXPECT_THROW(s.add({.path = "x", .default_value = "s", .help = "", .type = ValueType::kInt}),
               ValueError);
  EXPECT_THROW(s.add({.path = "bad/key", .default_value = 1, .help = ""}), ValueError);
  EXPECT_THROW(s.add({.path = "a..c", .default_value = 1, .help = ""}), ValueError);
  EXPECT_TRUE(s.is_section("a"));
  EXPECT_FALSE(s.is_section("a.b"));
  EXPECT_EQ(s.children(""), std::vector<std::string>{"a"});
  EXPECT_NE(s.help_text().find("--a.b INT"), std::string::npos);
}

TEST(CliSchema, EditDistance) {
  EXPECT_EQ(edit_distance("max_epoch", "max_epochs"), 1u);
  EXPECT_EQ(edit_distance("bacth", "batch"), 1u);  // a transposition counts once
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(closest_match("adan", {"sgd", "adam", "adamw"}), "adam");
  EXPECT_EQ(closest_match("qqqqqq", {"sgd", "adam"}), "");
}

}  // namespace
}  // namespace ath::cli
