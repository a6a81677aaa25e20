// ReduceLROnPlateau: multiply the lr by `factor` when a metric stops improving for `patience`
// epochs (torch.optim.lr_scheduler.ReduceLROnPlateau). Not an LRScheduler: its step takes the
// metric.
//
//   #include "athanor/nn/linear.h"
//   nn::Linear model({.in = 4, .out = 2});
//   optim::SGD opt(model.parameters(), {.lr = 0.1});
//   optim::ReduceLROnPlateau sched(opt, {.mode = optim::PlateauMode::Min, .patience = 3});
//   for (int epoch = 0; epoch < 6; ++epoch) {
//     double validation_loss = 1.0;   // train(opt), then evaluate: here a plateau
//     sched.step(validation_loss);
//   }
//   assert(std::abs(opt.param_group(0).lr() - 0.01) < 1e-12);   // cut once, after 4 bad epochs
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "athanor/optim/lr_scheduler.h"

namespace ath::optim {

enum class PlateauMode { Min, Max };
enum class ThresholdMode { Rel, Abs };

struct ReduceLROnPlateauOptions {
  PlateauMode mode = PlateauMode::Min;
  double factor = 0.1;  // < 1
  int64_t patience = 10;
  double threshold = 1e-4;
  ThresholdMode threshold_mode = ThresholdMode::Rel;
  int64_t cooldown = 0;
  PerGroup min_lr = 0.0;
  double eps = 1e-8;  // changes smaller than this are not made
};

class ReduceLROnPlateau {
 public:
  ReduceLROnPlateau(Optimizer& opt, ReduceLROnPlateauOptions options = {});
  ReduceLROnPlateau(const ReduceLROnPlateau&) = delete;
  ReduceLROnPlateau& operator=(const ReduceLROnPlateau&) = delete;

  void step(double metric);
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  double best() const { return best_; }
  int64_t num_bad_epochs() const { return num_bad_epochs_; }
  bool in_cooldown() const { return cooldown_counter_ > 0; }
  Optimizer& optimizer() const { return *opt_; }

  // PyTorch's keys (factor, min_lrs, patience, cooldown, cooldown_counter, mode, threshold,
  // threshold_mode, best, num_bad_epochs, mode_worse, eps, last_epoch) plus _last_lr.
  nlohmann::json state_dict() const;
  void load_state_dict(const nlohmann::json& state);

 private:
  bool is_better(double a, double best) const;
  Optimizer* opt_;
  PlateauMode mode_;
  double factor_;
  int64_t patience_;
  double threshold_;
  ThresholdMode threshold_mode_;
  int64_t cooldown_;
  std::vector<double> min_lrs_;
  double eps_;
  double best_;
  int64_t num_bad_epochs_ = 0;
  int64_t cooldown_counter_ = 0;
  int64_t last_epoch_ = 0;
  std::vector<double> last_lr_;
};

}  // namespace ath::optim
