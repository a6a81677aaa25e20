// LoggedMetrics: Lightning's self.log bookkeeping (see the header for the semantics).
#include "athanor/train/logged_metrics.h"

#include <algorithm>

#include "athanor/core/error.h"

namespace ath::train {

int LoggedMetrics::store_of(LogScope scope) {
  switch (scope) {
    case LogScope::TrainStep:
    case LogScope::TrainEpoch:
      return 0;
    case LogScope::Validation:
      return 1;
    case LogScope::Test:
      return 2;
    default:
      return 3;
  }
}

void LoggedMetrics::log(const std::string& name, double value, const LogOptions& options,
                        LogScope scope, int64_t batch_size) {
  ATH_CHECK(!name.empty(), ValueError, "log: the metric name is empty");
  const bool step_default = scope == LogScope::TrainStep;
  const bool on_step = options.on_step.value_or(step_default);
  const bool on_epoch = options.on_epoch.value_or(!step_default);
  ATH_CHECK(on_step || on_epoch, ValueError,
            "log('{}'): on_step and on_epoch are both false, so the value would go nowhere", name);
  const int64_t weight = options.batch_size.value_or(batch_size);
  ATH_CHECK(weight >= 0, ValueError, "log('{}'): batch_size must be >= 0, got {}", name, weight);

  if (on_step) {
    const double shown =
        options.sync_dist && reducer_ ? reducer_({value}, options.reduce, name)[0] : value;
    const std::string key = on_epoch ? name + "_step" : name;
    callback_[key] = shown;
    if (!on_epoch) callback_[name] = shown;
    if (options.prog_bar) progress_bar_[key] = shown;
    if (options.logger) step_logs_[key] = shown;
  }
  if (on_epoch) {
    // The epoch keeps this rank's own values; sync_dist reduces them at the epoch's end.
    Accumulator& acc = epoch_[store_of(scope)][name];
    acc.options = options;
    acc.options.on_step = on_step;
    const double w = static_cast<double>(weight);
    switch (options.reduce) {
      case Reduce::Mean:
        acc.total += value * w;
        acc.weight += w;
        break;
      case Reduce::Sum:
        acc.total += value;
        acc.weight = 1.0;
        break;
      case Reduce::Max:
        acc.total = acc.seen ? std::max(acc.total, value) : value;
        acc.weight = 1.0;
        break;
      case Reduce::Min:
        acc.total = acc.seen ? std::min(acc.total, value) : value;
        acc.weight = 1.0;
        break;
    }
    acc.seen = true;
  }
}

Metrics LoggedMetrics::take_step_logs() {
  Metrics out;
  out.swap(step_logs_);
  return out;
}

Metrics LoggedMetrics::end_epoch(LogScope scope) {
  Metrics to_loggers;
  auto& store = epoch_[store_of(scope)];
  for (const auto& [name, acc] : store) {
    if (!acc.seen) continue;
    double total = acc.total, weight = acc.weight;
    if (acc.options.sync_dist && reducer_) {
      if (acc.options.reduce == Reduce::Mean) {
        // Weighted by batch size over every rank's batches: sum the totals and the weights.
        const std::vector<double> both = reducer_({total, weight}, Reduce::Sum, name);
        total = both[0];
        weight = both[1];
      } else {
        total = reducer_({total}, acc.options.reduce, name)[0];
      }
    }
    // A mean over zero weight (every batch logged batch_size 0) is undefined: report NaN
    // rather than inventing a value.
    const double value = weight > 0.0 ? total / weight : std::numeric_limits<double>::quiet_NaN();
    const std::string key = acc.options.on_step.value_or(false) ? name + "_epoch" : name;
    callback_[key] = value;
    callback_[name] = value;
    if (acc.options.prog_bar) progress_bar_[key] = value;
    if (acc.options.logger) to_loggers[key] = value;
  }
  store.clear();
  return to_loggers;
}

void LoggedMetrics::reset(LogScope scope) { epoch_[store_of(scope)].clear(); }

}  // namespace ath::train
