#include "athanor/optim/reduce_lr_on_plateau.h"

#include <algorithm>
#include <cmath>

#include "athanor/core/error.h"
#include "json_util.h"

namespace ath::optim {

using nlohmann::json;
namespace du = detail;

namespace {
constexpr const char* kName = "ReduceLROnPlateau";

double worse(PlateauMode m) { return m == PlateauMode::Min ? INFINITY : -INFINITY; }

void check(double factor) {
  ATH_CHECK(factor < 1.0, ValueError, "ReduceLROnPlateau: factor should be < 1.0, got {}", factor);
}
}  // namespace

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& opt, ReduceLROnPlateauOptions o)
    : opt_(&opt),
      mode_(o.mode),
      factor_(o.factor),
      patience_(o.patience),
      threshold_(o.threshold),
      threshold_mode_(o.threshold_mode),
      cooldown_(o.cooldown),
      min_lrs_(o.min_lr.expand(opt.num_param_groups(), kName, "min_lr")),
      eps_(o.eps),
      best_(worse(o.mode)) {
  check(factor_);
  for (std::size_t g = 0; g < opt.num_param_groups(); ++g) last_lr_.push_back(opt.lr(g));
}

bool ReduceLROnPlateau::is_better(double a, double best) const {
  if (mode_ == PlateauMode::Min && threshold_mode_ == ThresholdMode::Rel)
    return a < best * (1. - threshold_);
  if (mode_ == PlateauMode::Min) return a < best - threshold_;
  if (threshold_mode_ == ThresholdMode::Rel) return a > best * (threshold_ + 1.);
  return a > best + threshold_;
}

void ReduceLROnPlateau::step(double metric) {
  ATH_CHECK(opt_->num_param_groups() == min_lrs_.size(), ValueError,
            "ReduceLROnPlateau: the optimizer has {} param groups, the scheduler was built for {}",
            opt_->num_param_groups(), min_lrs_.size());
  last_epoch_ += 1;
  if (is_better(metric, best_)) {
    best_ = metric;
    num_bad_epochs_ = 0;
  } else {
    num_bad_epochs_ += 1;
  }
  if (in_cooldown()) {
    cooldown_counter_ -= 1;
    num_bad_epochs_ = 0;  // bad epochs in cooldown do not count
  }
  if (num_bad_epochs_ > patience_) {
    for (std::size_t g = 0; g < opt_->num_param_groups(); ++g) {
      const double old_lr = opt_->lr(g);
      const double new_lr = std::max(old_lr * factor_, min_lrs_[g]);
      if (old_lr - new_lr > eps_) opt_->set_lr(g, new_lr);
    }
    cooldown_counter_ = cooldown_;
    num_bad_epochs_ = 0;
  }
  last_lr_.clear();
  for (std::size_t g = 0; g < opt_->num_param_groups(); ++g) last_lr_.push_back(opt_->lr(g));
}

json ReduceLROnPlateau::state_dict() const {
  return {{"factor", du::number_json(factor_)},
          {"min_lrs", du::numbers_json(min_lrs_)},
          {"patience", patience_},
          {"cooldown", cooldown_},
          {"cooldown_counter", cooldown_counter_},
          {"mode", mode_ == PlateauMode::Min ? "min" : "max"},
          {"threshold", du::number_json(threshold_)},
          {"threshold_mode", threshold_mode_ == ThresholdMode::Rel ? "rel" : "abs"},
          {"best", du::number_json(best_)},
          {"num_bad_epochs", num_bad_epochs_},
          {"mode_worse", du::number_json(worse(mode_))},
          {"eps", du::number_json(eps_)},
          {"last_epoch", last_epoch_},
          {"_last_lr", du::numbers_json(last_lr_)}};
}

void ReduceLROnPlateau::load_state_dict(const json& s) {
  du::require_object(s, "the state dict", kName);
  const auto n = static_cast<int64_t>(opt_->num_param_groups());
  double factor = du::read_number(s, "factor", kName);
  std::vector<double> min_lrs = du::read_numbers(s, "min_lrs", kName, n);
  int64_t patience = du::read_int(s, "patience", kName);
  int64_t cooldown = du::read_int(s, "cooldown", kName);
  int64_t cooldown_counter = du::read_int(s, "cooldown_counter", kName);
  std::string mode = du::read_string(s, "mode", kName);
  double threshold = du::read_number(s, "threshold", kName);
  std::string threshold_mode = du::read_string(s, "threshold_mode", kName);
  double best = du::read_number(s, "best", kName);
  int64_t bad = du::read_int(s, "num_bad_epochs", kName);
  double eps = du::read_number(s, "eps", kName);
  int64_t last_epoch = du::read_int(s, "last_epoch", kName);
  std::vector<double> last_lr = du::read_numbers(s, "_last_lr", kName, n);
  check(factor);
  ATH_CHECK(mode == "min" || mode == "max", ValueError, "ReduceLROnPlateau: mode {} is unknown!",
            mode);
  ATH_CHECK(threshold_mode == "rel" || threshold_mode == "abs", ValueError,
            "ReduceLROnPlateau: threshold mode {} is unknown!", threshold_mode);
  factor_ = factor;
  min_lrs_ = std::move(min_lrs);
  patience_ = patience;
  cooldown_ = cooldown;
  cooldown_counter_ = cooldown_counter;
  mode_ = mode == "min" ? PlateauMode::Min : PlateauMode::Max;
  threshold_ = threshold;
  threshold_mode_ = threshold_mode == "rel" ? ThresholdMode::Rel : ThresholdMode::Abs;
  best_ = best;
  num_bad_epochs_ = bad;
  eps_ = eps;
  last_epoch_ = last_epoch;
  last_lr_ = std::move(last_lr);
}

}  // namespace ath::optim
