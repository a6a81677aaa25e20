// athanor inspect: a plain safetensors file, a checkpoint-like file with the
// "athanor.checkpoint" metadata, and hostile files (status 2 with a message, never a crash).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "athanor/athanor.h"
#include "athanor/cli/inspect.h"
#include "athanor/io/safetensors.h"

namespace ath::cli {
namespace {

namespace fs = std::filesystem;

class ScratchDir {
 public:
  ScratchDir() {
    static int counter = 0;
    dir_ = fs::temp_directory_path() /
           ("athanor_inspect_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(dir_);
  }
  ~ScratchDir() { fs::remove_all(dir_); }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }
  std::string write(const std::string& name, const std::string& bytes) const {
    std::ofstream(file(name), std::ios::binary) << bytes;
    return file(name);
  }

 private:
  fs::path dir_;
};

struct Result {
  int status;
  std::string out, err;
};

Result inspect(const std::string& path) {
  std::ostringstream out, err;
  const int status = inspect_file(path, out, err);
  return {status, out.str(), err.str()};
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The 8-byte little-endian header length followed by `header`.
std::string with_header(const std::string& header, uint64_t declared) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((declared >> (8 * i)) & 0xff);
  return s + header;
}

std::string framed(const std::string& header) { return with_header(header, header.size()); }

TEST(CliInspect, PlainFile) {
  ScratchDir dir;
  StateDict sd;
  sd.insert("fc.weight", zeros({5, 6}));
  sd.insert("fc.bias", zeros({5}, kFloat64));
  sd.insert("steps", zeros({}, kInt64));
  const std::string path = dir.file("model.safetensors");
  save_safetensors(path, sd, {{"format", "pt"}});
  const Result r = inspect(path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_NE(r.out.find(path + ": 3 tensors, 36 elements, 168 B (168 bytes)"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("fc.weight  F32    [5, 6]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fc.bias    F64    [5]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("steps      I64    []"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("metadata:\n  format: pt\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("checkpoint"), std::string::npos);
}

TEST(CliInspect, CheckpointMetadata) {
  ScratchDir dir;
  StateDict sd;
  sd.insert("state_dict.1.weight", zeros({32, 1, 3, 3}));
  sd.insert("optimizer_states.0.state.0.exp_avg", zeros({32, 1, 3, 3}));
  const nlohmann::json ckpt = {
      {"athanor_version", "0.1.0"},
      {"epoch", 2},
      {"global_step", 2532},
      {"loops", {{"fit_loop", {{"epoch_progress", {{"current", 3}}}}}}},
      {"callbacks",
       {{"ModelCheckpoint{'monitor': 'val_acc', 'mode': 'max'}",
         {{"best_model_score", 0.91}, {"best_model_path", "runs/epoch=2.safetensors"}}},
        {"EarlyStopping{'monitor': 'val_loss'}", {{"wait_count", 1}}}}},
      {"hyper_parameters", {{"lr", 0.001}, {"model", "fashion_cnn"}}},
      {"optimizer_states", {{{"type", "Adam"}, {"param_groups", {{{"lr", 0.001}}}}}}},
      {"lr_schedulers", nlohmann::json::array()},
      {"extra_note", "kept"}};
  const std::string path = dir.file("last.safetensors");
  save_safetensors(path, sd, {{kCheckpointMetadataKey, ckpt.dump()}, {"format", "athanor"}});
  const Result r = inspect(path);
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* want :
       {"2 tensors, 576 elements, 2.2 KiB (2,304 bytes)", "metadata:\n  format: athanor\n",
        "checkpoint (athanor.checkpoint):\n  athanor_version: 0.1.0\n  epoch: 2\n"
        "  global_step: 2532\n",
        "  callbacks:\n    EarlyStopping{'monitor': 'val_loss'}: {\"wait_count\":1}\n"
        "    ModelCheckpoint{'monitor': 'val_acc', 'mode': 'max'}: "
        "{\"best_model_path\":\"runs/epoch=2.safetensors\",\"best_model_score\":0.91}\n",
        "  hyper_parameters:\n    lr: 0.001\n    model: fashion_cnn\n",
        "  loops:\n    fit_loop: {\"epoch_progress\":{\"current\":3}}\n",
        "  optimizer_states: 1 entry\n    [0] {\"param_groups\":[{\"lr\":0.001}],\"type\":"
        "\"Adam\"}\n",
        "  lr_schedulers: []\n", "  extra_note: kept\n"}) {
    EXPECT_NE(r.out.find(want), std::string::npos) << "missing: " << want << "\nin:\n" << r.out;
  }
}

TEST(CliInspect, HostileFilesExitWithStatusTwo) {
  ScratchDir dir;
  StateDict sd;
  sd.insert("w", zeros({4, 4}));
  const std::string good = dir.file("good.safetensors");
  save_safetensors(good, sd);
  const std::string bytes = read_bytes(good);

  std::vector<std::string> bad = {
      dir.file("missing.safetensors"),
      dir.write("empty.safetensors", ""),
      dir.write("short.safetensors", "abc"),
      dir.write("truncated.safetensors", bytes.substr(0, bytes.size() - 10)),
      dir.write("huge_header.safetensors", with_header("{}", uint64_t{1} << 60)),
      dir.write("not_json.safetensors", framed("this is no json")),
      dir.write("bad_offsets.safetensors",
                framed(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,99]}})")),
      dir.file(""),  // the directory itself
  };
  {
    // Metadata nested 5000 deep: refused before the recursive JSON parser sees it.
    const std::string header =
        R"({"__metadata__":{"athanor.checkpoint":")" + std::string(5000, '[') + R"("}})";
    bad.push_back(dir.write("deep_ckpt.safetensors", framed(header)));
  }
  bad.push_back(dir.write("bad_ckpt_json.safetensors", [] {
    const std::string header = R"({"__metadata__":{"athanor.checkpoint":"{not json"}})";
    return framed(header);
  }()));
  for (const auto& path : bad) {
    const Result r = inspect(path);
    EXPECT_EQ(r.status, 2) << path << "\n" << r.out;
    EXPECT_EQ(r.err.rfind("athanor: error: ", 0), 0u) << path << ": " << r.err;
  }
  const Result ckpt = inspect(bad.back());
  EXPECT_NE(ckpt.err.find("metadata 'athanor.checkpoint' is not valid JSON"), std::string::npos)
      << ckpt.err;
  EXPECT_EQ(inspect(good).status, 0);
}

}  // namespace
}  // namespace ath::cli
