// EarlyStopping (see the header), with Lightning's rules: improvement means better than the best
// by more than min_delta; NaN/Inf stops at once under check_finite.
#include "athanor/train/callbacks/early_stopping.h"

#include <fmt/format.h>

#include <cmath>

#include "athanor/core/error.h"
#include "athanor/train/trainer.h"
#include "state_key.h"

namespace ath::train {

EarlyStopping::EarlyStopping(EarlyStoppingOptions options) : options_(std::move(options)) {
  ATH_CHECK(!options_.monitor.empty(), ValueError, "EarlyStopping: `monitor` is required");
  ATH_CHECK(options_.mode == "min" || options_.mode == "max", ValueError,
            "EarlyStopping: mode must be 'min' or 'max', got '{}'", options_.mode);
  ATH_CHECK(options_.patience >= 0, ValueError, "EarlyStopping: patience must be >= 0, got {}",
            options_.patience);
  // Lightning stores min_delta signed by mode, so `current - min_delta` is always the bar.
  options_.min_delta = std::abs(options_.min_delta) * (options_.mode == "min" ? -1.0 : 1.0);
}

std::string EarlyStopping::state_key() const {
  return detail::lightning_state_key("EarlyStopping",
                                     {{"monitor", options_.monitor}, {"mode", options_.mode}});
}

nlohmann::json EarlyStopping::state_dict() const {
  return {{"wait_count", wait_},
          {"stopped_epoch", stopped_epoch_},
          {"best_score", best_ ? nlohmann::json(*best_) : nlohmann::json()},
          {"patience", options_.patience}};
}

void EarlyStopping::load_state_dict(const nlohmann::json& s) {
  wait_ = s.value("wait_count", int64_t{0});
  stopped_epoch_ = s.value("stopped_epoch", int64_t{0});
  best_.reset();
  if (s.contains("best_score") && s["best_score"].is_number())
    best_ = s["best_score"].get<double>();
}

bool EarlyStopping::improved(double current) const {
  if (!best_) return true;
  const double bar = *best_ + options_.min_delta;
  return options_.mode == "min" ? current < bar : current > bar;
}

void EarlyStopping::check(Trainer& trainer) {
  if (trainer.sanity_checking()) return;
  const Metrics& m = trainer.callback_metrics();
  auto it = m.find(options_.monitor);
  if (it == m.end()) {
    std::string available;
    for (const auto& [k, v] : m) available += (available.empty() ? "" : ", ") + k;
    ATH_CHECK(!options_.strict, KeyError,
              "EarlyStopping: monitor '{}' was not logged (available: {}); log it or set "
              "strict = false",
              options_.monitor, available.empty() ? "none" : available);
    return;
  }
  const double current = it->second;
  bool stop = false;
  const bool is_min = options_.mode == "min";
  if (options_.check_finite && !std::isfinite(current)) {
    stop = true;
    reason_ = fmt::format(
        "Monitored metric {} = {} is not finite. Previous best value was {}. "
        "Signaling Trainer to stop.",
        options_.monitor, current, best_ ? fmt::format("{:.3f}", *best_) : std::string("none"));
  } else if (options_.stopping_threshold && (is_min ? current < *options_.stopping_threshold
                                                    : current > *options_.stopping_threshold)) {
    stop = true;
    reason_ =
        fmt::format("Stopping threshold reached: {} = {} {} {}. Signaling Trainer to stop.",
                    options_.monitor, current, is_min ? "<" : ">", *options_.stopping_threshold);
  } else if (options_.divergence_threshold && (is_min ? current > *options_.divergence_threshold
                                                      : current < *options_.divergence_threshold)) {
    stop = true;
    reason_ = fmt::format(
        "Divergence threshold reached: {} = {} {} {}. Signaling Trainer to "
        "stop.",
        options_.monitor, current, is_min ? ">" : "<", *options_.divergence_threshold);
  } else if (improved(current)) {
    best_ = current;
    wait_ = 0;
    reason_.clear();
  } else {
    ++wait_;
    if (wait_ >= options_.patience) {
      stop = true;
      reason_ = fmt::format(
          "Monitored metric {} did not improve in the last {} records. Best "
          "score: {:.3f}. Signaling Trainer to stop.",
          options_.monitor, wait_, best_.value_or(current));
    }
  }
  if (stop) {
    stopped_epoch_ = trainer.current_epoch();
    trainer.request_stop("EarlyStopping: " + reason_);
    if (options_.verbose) fmt::print("EarlyStopping: {}\n", reason_);
  }
}

void EarlyStopping::on_train_epoch_end(Trainer& trainer, TrainingModule&) {
  if (options_.check_on_train_epoch_end) check(trainer);
}

void EarlyStopping::on_validation_end(Trainer& trainer, TrainingModule&) {
  if (!options_.check_on_train_epoch_end && trainer.fitting()) {
    check(trainer);
  }
}

}  // namespace ath::train
