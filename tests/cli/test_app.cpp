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
#include "support/run_cli.h"

namespace ath::cli {
namespace {

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

// A CSV of two separable classes: tabular_mlp through `athanor fit` end to end.
std::filesystem::path write_csv(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  const auto path = dir / "blobs.csv";
  std::ofstream f(path);
  f << "x0,x1,label\n";
  for (int i = 0; i < 240; ++i) {
    const int label = i % 2;
    const double a = (i * 37 % 100) / 100.0, b = (i * 61 % 100) / 100.0;
    f << (label * 3 + a) << "," << (label * 3 + b) << "," << label << "\n";
  }
  return path;
}

// A monitor naming no metric the task logs is a config error (status 2), found before training.
TEST(CliApp, MistypedMonitorIsAConfigErrorBeforeTraining) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("athanor_cli_monitor_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  const auto csv = write_csv(dir);
  const std::string config = scratch_file("monitor.yaml",
                                          "trainer:\n"
                                          "  callbacks:\n"
                                          "  - class_path: ModelCheckpoint\n"
                                          "    init_args: {monitor: val_los, mode: min}\n");
  CmdResult r =
      athanor({"fit", "--config", config, "--data.name=csv", "--data.path=" + csv.string(),
               "--model.name=tabular_mlp", "--trainer.default_root_dir=" + (dir / "runs").string(),
               "--trainer.enable_progress_bar=false"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err,
            "athanor: error: ModelCheckpoint: monitor 'val_los' is not a metric "
            "ClassificationTask logs (it logs train_loss, train_acc, val_loss, val_acc)\n");
  EXPECT_FALSE(
      std::filesystem::exists(dir / "runs" / "lightning_logs" / "version_0" / "checkpoints"));
  std::filesystem::remove_all(dir);
  std::filesystem::remove(config);
}

TEST(CliApp, FitTrainsTestsAndReportsWhereThingsWent) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("athanor_cli_fit_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  const auto csv = write_csv(dir);
  const std::vector<std::string> common = {"--data.name=csv",
                                           "--data.path=" + csv.string(),
                                           "--model.name=tabular_mlp",
                                           "--model.lr=0.01",
                                           "--data.batch_size=16",
                                           "--trainer.default_root_dir=" + (dir / "runs").string(),
                                           "--trainer.enable_progress_bar=false",
                                           "--trainer.enable_model_summary=false"};
  std::vector<std::string> fit = {"fit", "--trainer.max_epochs=4"};
  fit.insert(fit.end(), common.begin(), common.end());
  CmdResult r = athanor(fit);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("test_acc="), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("last checkpoint: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tensorboard: tensorboard --logdir " +
                       (dir / "runs" / "lightning_logs").string() + "\n"),
            std::string::npos)
      << r.out;

  // "last" in a new run (which logs to a new, empty version_N) finds the previous version's
  // checkpoint and says which file it loaded; docs/cli.md's `--ckpt_path last` example.
  std::vector<std::string> test_last = {"test", "--ckpt_path=last"};
  test_last.insert(test_last.end(), common.begin(), common.end());
  CmdResult tl = athanor(test_last);
  ASSERT_EQ(tl.status, 0) << tl.err;
  EXPECT_NE(
      tl.out.find(
          "checkpoint: " +
          (dir / "runs" / "lightning_logs" / "version_0" / "checkpoints" / "last.ckpt").string()),
      std::string::npos)
      << tl.out;
  std::vector<std::string> validate_best = {"validate", "--ckpt_path=best"};
  validate_best.insert(validate_best.end(), common.begin(), common.end());
  CmdResult vb = athanor(validate_best);
  ASSERT_EQ(vb.status, 0) << vb.err;
  EXPECT_NE(vb.out.find("checkpoint: " +
                        (dir / "runs" / "lightning_logs" / "version_0" / "checkpoints").string()),
            std::string::npos)
      << vb.out;
  CmdResult none =
      athanor({"test", "--ckpt_path=last", "--data.name=csv", "--data.path=" + csv.string(),
               "--model.name=tabular_mlp", "--trainer.default_root_dir=" + (dir / "empty").string(),
               "--trainer.enable_progress_bar=false"});
  EXPECT_EQ(none.status, 2);
  EXPECT_NE(none.err.find("no checkpoint was found (looked in " + (dir / "empty").string()),
            std::string::npos)
      << none.err;

  // fast_dev_run and barebones switch logging off; the built-in callbacks (LearningRateMonitor
  // among them) failed with "the Trainer has no logger".
  for (const char* flag : {"--trainer.fast_dev_run=true", "--trainer.barebones=true"}) {
    std::vector<std::string> quick = {"fit", "--trainer.max_epochs=1", flag};
    quick.insert(quick.end(), common.begin(), common.end());
    CmdResult q = athanor(quick);
    EXPECT_EQ(q.status, 0) << flag << ": " << q.err;
  }

  // A checkpoint from another optimizer, and a value a constructor rejects: refused input, exit
  // 2, naming the file or the value (they exited 1, the optimizer error without the file).
  const std::string sgd_ckpt =
      (dir / "runs" / "lightning_logs" / "version_0" / "checkpoints" / "last.ckpt").string();
  std::vector<std::string> other_opt = {"fit", "--trainer.max_epochs=5", "--ckpt_path=" + sgd_ckpt,
                                        "--model.optimizer=sgd"};
  other_opt.insert(other_opt.end(), common.begin(), common.end());
  CmdResult oo = athanor(other_opt);
  EXPECT_EQ(oo.status, 2) << oo.err;
  EXPECT_NE(oo.err.find("checkpoint '" + sgd_ckpt + "': "), std::string::npos) << oo.err;
  std::vector<std::string> negative = {"fit", "--trainer.max_epochs=-5"};
  negative.insert(negative.end(), common.begin(), common.end());
  CmdResult neg = athanor(negative);
  EXPECT_EQ(neg.status, 2) << neg.err;
  EXPECT_NE(neg.err.find("max_epochs"), std::string::npos) << neg.err;

  // A corrupt checkpoint: exit 2 naming the file, and the good one is untouched.
  const auto junk = dir / "junk.ckpt";
  std::ofstream(junk) << "not a checkpoint";
  std::vector<std::string> test = {"test", "--ckpt_path=" + junk.string()};
  test.insert(test.end(), common.begin(), common.end());
  CmdResult bad = athanor(test);
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("junk.ckpt"), std::string::npos) << bad.err;

  // A missing dataset: exit 2 naming the path and the Debian package.
  CmdResult missing = athanor({"fit", "--data.name=fashion-mnist", "--data.root=/nonexistent/fm",
                               "--trainer.enable_progress_bar=false"});
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("/nonexistent/fm"), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("dataset-fashion-mnist"), std::string::npos) << missing.err;
  // In the command line's words: the setting to change, not a C++ option.
  EXPECT_NE(missing.err.find("error: data.root: "), std::string::npos) << missing.err;
  EXPECT_EQ(missing.err.find(".root to"), std::string::npos) << missing.err;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ath::cli
