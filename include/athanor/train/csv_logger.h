// CSVLogger: Lightning's CSV logger. Writes save_dir/name/version_N/metrics.csv (a `step` column
// plus every metric key seen, sorted; a row per log_metrics call, empty cells for keys a call did
// not log) and hparams.yaml next to it.
//
//   train::CSVLoggerOptions options;
//   options.name = "mlp";
//   auto logger = std::make_shared<train::CSVLogger>("runs", options);
//   logger->log_hyperparams({{"lr", 0.1}, {"batch_size", 64}});  // runs/mlp/version_0/hparams.yaml
//   logger->log_metrics({{"train_loss", 0.41}}, 50);
//   logger->save();                                               // .../version_0/metrics.csv
//
// Rows are buffered and written by save() (and every flush_logs_every_n_steps-th step, as
// Lightning). When a key appears after the header was written, the whole file is rewritten with
// the widened header, as Lightning does. Every write replaces the file atomically, so a crash
// leaves the previous complete metrics.csv, never a torn one. A fixed version whose directory
// already holds a metrics.csv gets it replaced at the first save (Lightning deletes it).
// Lines end in "\n" (Lightning's csv module writes "\r\n"); values are written in the shortest
// form that reads back to the same double ("0.1", "2", "nan", "inf").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "athanor/train/logger.h"

namespace ath::train {

struct CSVLoggerOptions {
  std::string name = "lightning_logs";  // empty: versions directly under save_dir
  // Unset: one more than the highest existing save_dir/name/version_N (0 when there is none).
  std::optional<int64_t> version;
  // Also save() after log_metrics at every step with (step + 1) % n == 0; 0: only on save().
  int64_t flush_logs_every_n_steps = 100;
};

class CSVLogger : public Logger {
 public:
  // Picks the version and creates log_dir() (an IOError if that fails).
  explicit CSVLogger(std::string save_dir, CSVLoggerOptions options = {});

  std::string name() const override { return options_.name; }
  std::string version() const override { return "version_" + std::to_string(version_); }
  std::string log_dir() const override { return log_dir_; }
  int64_t version_number() const { return version_; }
  std::string metrics_file() const { return log_dir_ + "/metrics.csv"; }
  std::string hparams_file() const { return log_dir_ + "/hparams.yaml"; }

  // Merged into the hyperparameters logged so far (top-level keys replace), hparams.yaml
  // rewritten at once. Must be a JSON object (ValueError otherwise).
  void log_hyperparams(const nlohmann::json& hparams) override;
  void log_metrics(const Metrics& metrics, int64_t step) override;
  void save() override;

 private:
  struct Row {
    int64_t step;
    Metrics values;
  };
  std::string render(const Row& row) const;

  std::string save_dir_, log_dir_;
  CSVLoggerOptions options_;
  int64_t version_ = 0;
  nlohmann::json hparams_ = nlohmann::json::object();
  std::vector<std::string> keys_;  // the header: sorted, "step" included
  std::vector<Row> written_, pending_;
  std::string body_;  // written_ rendered under keys_
};

// The hyperparameters as YAML the way Lightning's hparams.yaml reads: block mappings and
// sequences, floats always with a '.' or exponent form PyYAML reads back as floats ("0.001",
// "1.0e-05", ".nan"), strings quoted when they would otherwise read as another type.
std::string hparams_to_yaml(const nlohmann::json& hparams);

// A double in the shortest text that reads back to the same value ("0.1", "2", "1e-05", "nan").
std::string format_metric_value(double v);

}  // namespace ath::train
