// LearningRateMonitor: Lightning's callback — logs the optimizer's learning rate (and optionally
// momentum and weight decay) to the loggers as training goes.
//
//   #include "athanor/train/trainer.h"
//   train::TrainerOptions opts;
//   opts.callbacks.push_back(std::make_shared<train::LearningRateMonitor>(
//       train::LearningRateMonitorOptions{.logging_interval = "step", .log_momentum = true}));
//   // loggers receive {"lr-SGD": 0.1, "lr-SGD-momentum": 0.9} at the steps they log
//
// Keys: "lr-<OptimizerName>", or the scheduler config's `name` when set; with several param
// groups "lr-<Name>/pg1", "lr-<Name>/pg2", ... (1-based, as Lightning); "-momentum" and
// "-weight_decay" suffixes for the extras (momentum is betas[0] for the Adam family, 0 when the
// optimizer has neither). logging_interval "step" logs at the start of every training batch
// whose step is a logging step (log_every_n_steps), "epoch" at the start of every epoch, and ""
// (auto) follows the scheduler's interval — an optimizer without a scheduler is logged at both.
// Needs at least one logger (ValueError at train start otherwise).
#pragma once

#include <string>

#include "athanor/train/callback.h"
#include "athanor/train/logger.h"

namespace ath::train {

struct LearningRateMonitorOptions {
  std::string logging_interval;  // "step", "epoch" or "" (auto)
  bool log_momentum = false;
  bool log_weight_decay = false;
};

class LearningRateMonitor : public Callback {
 public:
  explicit LearningRateMonitor(LearningRateMonitorOptions options = {});

  std::string state_key() const override { return "LearningRateMonitor"; }
  void on_train_start(Trainer& trainer, TrainingModule& module) override;
  void on_train_batch_start(Trainer& trainer, TrainingModule& module, const data::Batch& batch,
                            int64_t batch_idx) override;
  void on_train_epoch_start(Trainer& trainer, TrainingModule& module) override;

  // The values that would be logged now for `interval` ("step", "epoch" or "any").
  Metrics extract_stats(Trainer& trainer, const std::string& interval) const;

 private:
  LearningRateMonitorOptions options_;
  int64_t last_step_logged_ = -1;
};

}  // namespace ath::train
