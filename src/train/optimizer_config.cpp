// LRSchedulerConfig: one face for both scheduler kinds (epoch/step schedulers and
// ReduceLROnPlateau, which PyTorch keeps outside the LRScheduler hierarchy).
#include "athanor/train/optimizer_config.h"

#include "athanor/core/error.h"

namespace ath::train {

namespace {
void check_options(const SchedulerOptions& o, bool plateau) {
  ATH_CHECK(o.frequency >= 1, ValueError, "LRSchedulerConfig: frequency must be >= 1, got {}",
            o.frequency);
  ATH_CHECK(!plateau || !o.monitor.empty(), ValueError,
            "LRSchedulerConfig: ReduceLROnPlateau needs `monitor` (the metric it watches, e.g. "
            "\"val_loss\")");
}
}  // namespace

LRSchedulerConfig::LRSchedulerConfig(std::shared_ptr<optim::LRScheduler> scheduler,
                                     SchedulerOptions options)
    : scheduler_(std::move(scheduler)), options_(std::move(options)) {
  ATH_CHECK(scheduler_ != nullptr, ValueError, "LRSchedulerConfig: the scheduler is null");
  check_options(options_, false);
}

LRSchedulerConfig::LRSchedulerConfig(std::shared_ptr<optim::ReduceLROnPlateau> scheduler,
                                     SchedulerOptions options)
    : plateau_(std::move(scheduler)), options_(std::move(options)) {
  ATH_CHECK(plateau_ != nullptr, ValueError, "LRSchedulerConfig: the scheduler is null");
  check_options(options_, true);
}

void LRSchedulerConfig::step(std::optional<double> metric) {
  if (plateau_) {
    ATH_CHECK(metric.has_value(), ValueError,
              "LRSchedulerConfig: ReduceLROnPlateau stepped without its metric '{}'",
              options_.monitor);
    plateau_->step(*metric);
  } else {
    scheduler_->step();
  }
}

std::vector<double> LRSchedulerConfig::last_lr() const {
  return plateau_ ? plateau_->get_last_lr() : scheduler_->get_last_lr();
}

std::string LRSchedulerConfig::type_name() const {
  return plateau_ ? std::string("ReduceLROnPlateau") : scheduler_->name();
}

nlohmann::json LRSchedulerConfig::state_dict() const {
  return plateau_ ? plateau_->state_dict() : scheduler_->state_dict();
}

void LRSchedulerConfig::load_state_dict(const nlohmann::json& state) {
  if (plateau_) {
    plateau_->load_state_dict(state);
  } else {
    scheduler_->load_state_dict(state);
  }
}

}  // namespace ath::train
