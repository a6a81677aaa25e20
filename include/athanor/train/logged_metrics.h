// LoggedMetrics: what TrainingModule::log collects, with Lightning's semantics.
//
// A value logged with on_step goes out at once (as `name`, or `name_step` when on_epoch is also
// set); one logged with on_epoch is reduced over the epoch — a mean weighted by batch size by
// default — and goes out at the epoch's end (as `name`, or `name_epoch`). The defaults depend on
// where log() is called: on_step in training_step and the training batch hooks, on_epoch
// everywhere else (validation/test steps, epoch-end hooks).
//
// With sync_dist (Lightning's), a data-parallel run reduces the value across its ranks with the
// same `reduce` (Mean: the mean over ranks): a step value when it is logged, an epoch value at
// the epoch's end (a Mean then weights every rank's values by their batch sizes, so it is the
// mean over all ranks' batches). Every rank must log a sync_dist value at the same points, as
// each reduction is a collective. In one process it changes nothing.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

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
  bool sync_dist = false;             // reduce across ranks with `reduce` (see above)
};

// Reduces `values` element-wise across the ranks of a run with `op` (Mean: the mean over
// ranks); `name` names the collective in errors. The Trainer installs its strategy's.
using RankReducer = std::function<std::vector<double>(const std::vector<double>& values, Reduce op,
                                                      const std::string& name)>;

// Where a log() call comes from; decides the on_step/on_epoch defaults and which store it
// belongs to (each loop's epoch values are separate).
enum class LogScope { TrainStep, TrainEpoch, Validation, Test, Predict, Other };

class LoggedMetrics {
 public:
  void log(const std::string& name, double value, const LogOptions& options, LogScope scope,
           int64_t batch_size);
  // How sync_dist values are reduced across ranks; unset (the default) means one process.
  void set_rank_reducer(RankReducer reducer) { reducer_ = std::move(reducer); }

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
  RankReducer reducer_;
  Metrics step_logs_;
  Metrics callback_;
  Metrics progress_bar_;
};

}  // namespace ath::train
