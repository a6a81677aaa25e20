// `athanor export` in-process: a fitted tabular model exported and verified from its checkpoint
// alone (the config comes from the checkpoint's hyperparameters), and bad input exiting 2 with a
// message naming what is wrong.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "athanor/cli/app.h"
#include "athanor/cli/export.h"
#include "athanor/models/fashion.h"
#include "athanor/train/checkpoint.h"
#include "support/run_cli.h"

namespace ath::cli {
namespace {

namespace fs = std::filesystem;

fs::path scratch_dir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("athanor_export_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(CliExport, FittedTabularModelExportsFromItsCheckpointAlone) {
  const fs::path dir = scratch_dir("tabular");
  {
    std::ofstream f(dir / "blobs.csv");
    f << "x0,x1,x2,label\n";
    for (int i = 0; i < 90; ++i)
      f << (i % 3) + (i * 37 % 100) / 100.0 << "," << (i * 61 % 100) / 100.0 << "," << i % 7 << ","
        << i % 3 << "\n";
  }
  CmdResult fit = athanor({"fit", "--data.name=csv", "--data.path=" + (dir / "blobs.csv").string(),
                           "--model.name=tabular_mlp", "--data.batch_size=16",
                           "--trainer.max_steps=3", "--trainer.enable_progress_bar=false",
                           "--trainer.default_root_dir=" + dir.string()});
  ASSERT_EQ(fit.status, 0) << fit.err;
  const fs::path ckpt = dir / "lightning_logs" / "version_0" / "checkpoints" / "last.ckpt";
  ASSERT_TRUE(fs::exists(ckpt));
  const std::string onnx = (dir / "model.onnx").string();
  CmdResult r = athanor({"export", "--ckpt_path", ckpt.string(), "--output", onnx});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("(tabular_mlp, opset 17)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("inputs: input: float32[batch,3]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(ok)"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(onnx));
}

TEST(CliExport, BadInputExitsTwoNamingTheFault) {
  const fs::path dir = scratch_dir("bad");
  const std::string onnx = (dir / "model.onnx").string();
  CmdResult missing =
      athanor({"export", "--ckpt_path", (dir / "none.ckpt").string(), "--output", onnx});
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("--ckpt_path: cannot read"), std::string::npos) << missing.err;
  EXPECT_EQ(athanor({"export", "--output", onnx}).status, 2);  // --ckpt_path is required

  // A checkpoint of W2's CNN exported as another model: the weights do not fit.
  train::CheckpointFile ckpt{.meta = nlohmann::json::object()};
  ckpt.add_section("state_dict.net", models::fashion_cnn()->state_dict());
  const std::string path = (dir / "cnn.ckpt").string();
  train::save_checkpoint(path, ckpt);
  CmdResult other = athanor({"export", "--ckpt_path", path, "--output", onnx, "--input_shape",
                             "2,16", "--model.name=char_lstm"});
  EXPECT_EQ(other.status, 2);
  EXPECT_NE(other.err.find("do not fit model.name 'char_lstm'"), std::string::npos) << other.err;
  CmdResult shape =
      athanor({"export", "--ckpt_path", path, "--output", onnx, "--input_shape", "2,x"});
  EXPECT_EQ(shape.status, 2);
  EXPECT_NE(shape.err.find("--input_shape"), std::string::npos) << shape.err;
  EXPECT_FALSE(fs::exists(onnx));

  CmdResult ok = athanor({"export", "--ckpt_path", path, "--output", onnx, "--input_shape",
                          "2,1,28,28", "--opset", "13"});
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_NE(ok.out.find("opset 13"), std::string::npos) << ok.out;
}

}  // namespace
}  // namespace ath::cli
