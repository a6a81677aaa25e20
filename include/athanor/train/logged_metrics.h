// LoggedMetrics: what TrainingModule::log collects, with Lightning's semantics.
//
// A value logged with on_step goes out at once (as `name`, or `name_step` when on_epoch is also
// set); one logged with on_epoch is reduced over the epoch — a mean weighted by batch size by
// default — and goes out at the epoch's end (as `name`, or `name_epoch`). The defaults depend on
// where log() is called: on_step in training_step and the training batch hooks, on_epoch
// everywhere else (validation/test steps, epoch-end hooks).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "athanor/train/logger.h"

namespace ath::train {

enum class Reduce { Mean, Sum, Max, Min };

struct LogOptions {
  std::optional<bool> on_step;        // default: by hook (see above)
  std::optional<bool> on_epoch;       // default: by hook
  bool prog_bar = false;              // show on the progress bar
  bool logger = true;                 // send to the loggers
  Reduce reduce = Reduce::Mean;       // epoch reduction (Mean is weighted by batch size)
  std::optional<int64_t> batch_size;  // the weight; default: the current batch's size
};

// Where a log() call comes from; decides the on_step/on_epoch defaults and which store it
// belongs to (each loop's epoch values are separate).
enum class LogScope { TrainStep, TrainEpoch, Validation, Test, Predict, Other };

class LoggedMetrics {
 public:
  void log(const std::string& name, double value, const LogOptions& options, LogScope scope,
           int64_t batch_size);

  // Values logged on_step since the last take, for the loggers; cleared by the call.
  Metrics take_step_logs();
  // Reduces the epoch values of `scope` (TrainStep/TrainEpoch share the training store), makes
  // them the callback/progress-bar metrics and returns what goes to the loggers. Clears them.
  Metrics end_epoch(LogScope scope);
  // Forgets the epoch values of `scope` (a new epoch or evaluation run begins).
  void reset(LogScope scope);

  // Latest value of every metric: what ModelCheckpoint/EarlyStopping monitor.
  const Metrics& callback_metrics() const { return callback_; }
  const Metrics& progress_bar_metrics() const { return progress_bar_; }
  void clear_progress_bar() { progress_bar_.clear(); }

 private:
  struct Accumulator {
    LogOptions options;
    double total = 0.0;   // weighted sum, or the running max/min
    double weight = 0.0;  // total batch size seen
    bool seen = false;
  };
  static int store_of(LogScope scope);

  std::map<std::string, Accumulator> epoch_[4];  // train, validation, test, other
  Metrics step_logs_;
  Metrics callback_;
  Metrics progress_bar_;
};

}  // namespace ath::train
