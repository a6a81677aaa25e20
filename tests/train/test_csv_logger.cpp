// CSVLogger: Lightning's directory layout and versions, metrics.csv with a widening header,
// hparams.yaml.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "athanor/core/error.h"
#include "athanor/train/csv_logger.h"
#include "io/temp_dir.h"

namespace ath::train {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(CSVLogger, LayoutAndVersions) {
  TempDir dir;
  CSVLogger a(dir.path().string(), {.name = "mlp"});
  EXPECT_EQ(a.name(), "mlp");
  EXPECT_EQ(a.version(), "version_0");
  EXPECT_EQ(a.log_dir(), (dir.path() / "mlp" / "version_0").string());
  EXPECT_TRUE(fs::is_directory(a.log_dir()));
  CSVLogger b(dir.path().string(), {.name = "mlp"});
  EXPECT_EQ(b.version(), "version_1");
  fs::create_directories(dir.path() / "mlp" / "version_7");
  fs::create_directories(dir.path() / "mlp" / "version_x");  // not a version: ignored
  std::ofstream(dir.file("mlp/version_9"));                  // a file, not a directory
  CSVLogger c(dir.path().string(), {.name = "mlp"});
  EXPECT_EQ(c.version_number(), 8);
  CSVLogger fixed(dir.path().string(), {.name = "mlp", .version = 3});
  EXPECT_EQ(fixed.log_dir(), (dir.path() / "mlp" / "version_3").string());
  CSVLogger flat(dir.path().string(), {.name = ""});
  EXPECT_EQ(flat.log_dir(), (dir.path() / "version_0").string());
  EXPECT_THROW(CSVLogger(dir.path().string(), {.version = -1}), ValueError);
  std::ofstream(dir.file("blocker"));
  EXPECT_THROW(CSVLogger(dir.file("blocker"), {}), IOError);
}

TEST(CSVLogger, MetricsCsvWidensHeader) {
  TempDir dir;
  CSVLogger log(dir.path().string());
  log.save();  // nothing logged: no file
  EXPECT_FALSE(fs::exists(log.metrics_file()));
  log.log_metrics({{"train_loss", 0.5}, {"epoch", 0}}, 0);
  log.log_metrics({{"train_loss", 0.25}, {"epoch", 0}}, 1);
  EXPECT_FALSE(fs::exists(log.metrics_file()));  // buffered until save()
  log.save();
  EXPECT_EQ(slurp(log.metrics_file()), "epoch,step,train_loss\n0,0,0.5\n0,1,0.25\n");
  log.log_metrics({{"val_acc", 0.875}, {"epoch", 0}}, 1);
  log.save();  // a new key: the whole file is rewritten with the widened header
  EXPECT_EQ(slurp(log.metrics_file()),
            "epoch,step,train_loss,val_acc\n0,0,0.5,\n0,1,0.25,\n0,1,,0.875\n");
  log.log_metrics({{"train_loss", 1e-5}, {"weird,\"name\"", std::nan("")}}, 2);
  log.finalize("success");
  EXPECT_EQ(slurp(log.metrics_file()),
            "epoch,step,train_loss,val_acc,\"weird,\"\"name\"\"\"\n0,0,0.5,,\n0,1,0.25,,\n"
            "0,1,,0.875,\n,2,1e-05,,nan\n");
  // Only the destination is left, never a temporary file.
  std::vector<std::string> entries;
  for (const auto& e : fs::directory_iterator(log.log_dir())) {
    entries.push_back(e.path().filename().string());
  }
  EXPECT_EQ(entries, std::vector<std::string>{"metrics.csv"});
}

TEST(CSVLogger, FailedSaveKeepsRowsForTheNextOne) {
  TempDir dir;
  CSVLogger log(dir.path().string());
  log.log_metrics({{"a", 1}}, 0);
  log.save();
  // A directory where metrics.csv should go makes the atomic rename fail.
  fs::remove(log.metrics_file());
  fs::create_directories(fs::path(log.metrics_file()) / "blocker");
  log.log_metrics({{"b", 2}}, 1);  // a new key: the header widens
  EXPECT_THROW(log.save(), IOError);
  fs::remove_all(log.metrics_file());
  log.log_metrics({{"a", 3}}, 2);
  log.save();  // everything, under the widened header
  EXPECT_EQ(slurp(log.metrics_file()), "a,b,step\n1,,0\n,2,1\n3,,2\n");
  std::vector<std::string> entries;
  for (const auto& e : fs::directory_iterator(log.log_dir())) {
    entries.push_back(e.path().filename().string());
  }
  EXPECT_EQ(entries, std::vector<std::string>{"metrics.csv"});  // no temporary left behind
}

TEST(CSVLogger, FlushEveryNSteps) {
  TempDir dir;
  CSVLogger log(dir.path().string(), {.flush_logs_every_n_steps = 2});
  log.log_metrics({{"loss", 1}}, 0);
  EXPECT_FALSE(fs::exists(log.metrics_file()));
  log.log_metrics({{"loss", 2}}, 1);  // (1 + 1) % 2 == 0
  EXPECT_EQ(slurp(log.metrics_file()), "loss,step\n1,0\n2,1\n");
}

TEST(CSVLogger, HparamsYaml) {
  TempDir dir;
  CSVLogger log(dir.path().string());
  log.log_hyperparams({{"lr", 0.001}, {"batch_size", 64}, {"name", "mlp"}});
  log.log_hyperparams({{"weight_decay", 1e-5}, {"lr", 0.01}});  // merged; lr replaced
  EXPECT_EQ(slurp(log.hparams_file()),
            "batch_size: 64\nlr: 0.01\nname: mlp\nweight_decay: 1.0e-05\n");
  EXPECT_THROW(log.log_hyperparams(nlohmann::json::array({1, 2})), ValueError);
}

TEST(CSVLogger, YamlConversion) {
  nlohmann::json j = {{"model", {{"hidden", {128, 64}}, {"dropout", 0.5}, {"act", "relu"}}},
                      {"flags", {{"amp", true}, {"ckpt", nullptr}}},
                      {"tricky", {"true", "1.5", "", "a: b", "# c"}},
                      {"big", 2.0},
                      {"neg", -3},
                      {"inf", std::numeric_limits<double>::infinity()}};
  EXPECT_EQ(hparams_to_yaml(j),
            "big: 2.0\n"
            "flags:\n  amp: true\n  ckpt: null\n"
            "\"inf\": .inf\n"  // "inf" would read back as a float in YAML 1.2: quoted
            "model:\n  act: relu\n  dropout: 0.5\n  hidden:\n  - 128\n  - 64\n"
            "neg: -3\n"
            "tricky:\n- \"true\"\n- \"1.5\"\n- \"\"\n- \"a: b\"\n- \"# c\"\n");
  // PyYAML's layout for what nests deeper: a mapping in a sequence starts on the dash's line,
  // empty collections are written inline.
  EXPECT_EQ(hparams_to_yaml({{"layers", {{{"in", 2}, {"out", 3}}, {1, 2}}},
                             {"none", nlohmann::json::object()},
                             {"empty", nlohmann::json::array()}}),
            "empty: []\nlayers:\n- in: 2\n  out: 3\n- - 1\n  - 2\nnone: {}\n");
  EXPECT_EQ(hparams_to_yaml(nlohmann::json::object()), "{}\n");
  EXPECT_EQ(format_metric_value(0.1), "0.1");
  EXPECT_EQ(format_metric_value(3.0), "3");
  EXPECT_EQ(format_metric_value(-std::numeric_limits<double>::infinity()), "-inf");
}

}  // namespace
}  // namespace ath::train
