// The athanor command in-process: subcommands, exit statuses (0 ok, 2 usage/config/format
// errors, 1 other failures) and what goes to stdout and stderr.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "athanor/cli/app.h"
#include "athanor/cli/athanor_schema.h"
#include "athanor/cli/config.h"

namespace ath::cli {
namespace {

struct CmdResult {
  int status;
  std::string out, err;
};

CmdResult athanor(std::vector<std::string> args) {
  args.insert(args.begin(), "athanor");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  const int status = athanor_main(static_cast<int>(argv.size()), argv.data(), out, err);
  return {status, out.str(), err.str()};
}

std::string scratch_file(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("athanor_app_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(path) << text;
  return path.string();
}

TEST(CliApp, VersionAndHelp) {
  CmdResult v = athanor({"--version"});
  EXPECT_EQ(v.status, 0);
  EXPECT_EQ(v.out, std::string("athanor ") + athanor_version() + "\n");
  CmdResult h = athanor({"--help"});
  EXPECT_EQ(h.status, 0);
  for (const char* sub : {"fit", "validate", "test", "predict", "inspect"}) {
    EXPECT_NE(h.out.find(sub), std::string::npos) << h.out;
  }
  CmdResult fh = athanor({"fit", "--help"});
  EXPECT_EQ(fh.status, 0);
  EXPECT_NE(fh.out.find("--config"), std::string::npos) << fh.out;
  EXPECT_NE(fh.out.find("--trainer.max_epochs INT|null"), std::string::npos) << fh.out;
  EXPECT_NE(fh.out.find("--model.optimizer {sgd,adam,adamw}"), std::string::npos) << fh.out;
}

TEST(CliApp, PrintConfig) {
  CmdResult r = athanor({"fit", "--print_config", "--trainer.max_epochs=5", "--model.lr", "0.01"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  // What it prints is the resolved config: loading it back gives the same.
  const Schema schema = athanor_schema();
  const nlohmann::json expected =
      resolve_config(schema, default_config_yaml(), {},
                     parse_overrides({"--trainer.max_epochs=5", "--model.lr=0.01"}));
  nlohmann::json back = schema.defaults();
  merge_yaml(schema, back, r.out, "<stdout>");
  EXPECT_EQ(back, expected) << r.out;
  EXPECT_NE(r.out.find("  max_epochs: 5\n"), std::string::npos);

  CmdResult c = athanor({"validate", "--print_config=comments"});
  EXPECT_EQ(c.status, 0) << c.err;
  EXPECT_NE(c.out.find("  # Learning rate\n  lr: 0.001\n"), std::string::npos) << c.out;
  EXPECT_EQ(athanor({"fit", "--print_config=loud"}).status, 2);
}

TEST(CliApp, ConfigFilesRepeatAndLaterOnesWin) {
  const std::string a = scratch_file("a.yaml", "trainer:\n  max_epochs: 4\nmodel:\n  lr: 0.5\n");
  const std::string b = scratch_file("b.yaml", "trainer:\n  max_epochs: 8\n");
  CmdResult r = athanor({"test", "--config", a, "--config=" + b, "--print_config"});
  std::filesystem::remove(a);
  std::filesystem::remove(b);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("  max_epochs: 8\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  lr: 0.5\n"), std::string::npos) << r.out;
}

TEST(CliApp, ConfigErrorsExitWithStatusTwo) {
  CmdResult typo = athanor({"fit", "--trainer.max_epoch=3"});
  EXPECT_EQ(typo.status, 2);
  EXPECT_EQ(typo.out, "");
  EXPECT_EQ(typo.err,
            "athanor: error: unknown key 'trainer.max_epoch' in argument "
            "'--trainer.max_epoch=3'; did you mean 'trainer.max_epochs'?\n");
  EXPECT_EQ(athanor({"fit", "--config", "/nonexistent.yaml"}).status, 2);
  EXPECT_EQ(athanor({"fit", "--trainer.max_epochs", "three"}).status, 2);
  EXPECT_EQ(athanor({"fit", "stray"}).status, 2);
  EXPECT_EQ(athanor({"fit", "--trainer.max_epochs"}).status, 2);
  // A config that resolves but cannot work together.
  CmdResult mismatch = athanor({"fit", "--model.name=char_lstm"});
  EXPECT_EQ(mismatch.status, 2);
  EXPECT_NE(mismatch.err.find("does not fit data.name 'fashion-mnist'"), std::string::npos);
}

TEST(CliApp, UsageErrorsExitWithStatusTwo) {
  CmdResult none = athanor({});
  EXPECT_EQ(none.status, 2);
  EXPECT_EQ(none.err.rfind("athanor: error: ", 0), 0u) << none.err;
  EXPECT_EQ(athanor({"train"}).status, 2);
  EXPECT_EQ(athanor({"--bogus"}).status, 2);
  EXPECT_EQ(athanor({"inspect"}).status, 2);
  CmdResult bad = athanor({"inspect", "/nonexistent.safetensors"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("/nonexistent.safetensors"), std::string::npos) << bad.err;
}

TEST(CliApp, FitBuildsTheModelThenStopsAtTheTrainerSeam) {
  // Until the Trainer is wired in, fit builds model and optimizer and reports status 1.
  for (const char* model : {"fashion_mlp", "fashion_cnn", "resnet"}) {
    CmdResult r = athanor({"fit", std::string("--model.name=") + model, "--model.resnet.width=2",
                           "--model.scheduler=cosine"});
    EXPECT_EQ(r.status, 1) << model;
    EXPECT_NE(r.err.find("Trainer wiring lands with the Trainer"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace ath::cli
