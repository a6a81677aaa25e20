// Logger: where the Trainer sends hyperparameters and metrics (Lightning's Logger). CSVLogger,
// the HTML report and user loggers implement it.
//
//   #include "athanor/train/trainer.h"
//   class PrintLogger : public ath::train::Logger {
//     std::string name() const override { return "print"; }
//     void log_hyperparams(const nlohmann::json& hparams) override {}
//     void log_metrics(const train::Metrics& m, int64_t step) override {
//       for (auto& [k, v] : m) fmt::print("step {}: {} = {}\n", step, k, v);
//     }
//   };
//   train::TrainerOptions opts;
//   opts.loggers.push_back(std::make_shared<PrintLogger>());   // replaces the default loggers
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace ath::train {

// Metric name -> value for one logging call, e.g. {"train_loss_step": 0.41, "epoch": 2}.
using Metrics = std::map<std::string, double>;

class Logger {
 public:
  virtual ~Logger() = default;

  virtual std::string name() const = 0;
  // "version_3" for CSVLogger; empty when the logger has no versions.
  virtual std::string version() const { return {}; }
  // The directory this logger writes into (checkpoints go under it by default); empty if none.
  virtual std::string log_dir() const { return {}; }

  // Saved hyperparameters (module's and datamodule's), once before training.
  virtual void log_hyperparams(const nlohmann::json& hparams) = 0;
  // Metrics logged at `step` (the Trainer's global_step). Called at most once per step per
  // logging point; keys may differ between calls.
  virtual void log_metrics(const Metrics& metrics, int64_t step) = 0;
  // Free-form run information a logger may show (model summary text, throughput, timings).
  virtual void log_text(const std::string& /*key*/, const std::string& /*text*/) {}
  // Flush buffered output to disk (the Trainer calls it at epoch ends and checkpoints).
  virtual void save() {}
  // End of a run: "success", "failed" or "interrupted".
  virtual void finalize(const std::string& /*status*/) { save(); }
};

}  // namespace ath::train
