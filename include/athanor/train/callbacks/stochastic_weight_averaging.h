// StochasticWeightAveraging: Lightning's SWA callback. From swa_epoch_start on, each param
// group's learning rate is annealed to its swa_lr over annealing_epochs (torch's SWALR, which
// takes over from the configured scheduler), the parameters are averaged once per epoch, and
// when training ends the average is copied into the module; BatchNorm running statistics are
// then recomputed with one pass over the training data (a cumulative average, as
// torch.optim.swa_utils.update_bn).
//
//   #include "athanor/train/trainer.h"
//   train::TrainerOptions opts;
//   opts.max_epochs = 20;
//   opts.callbacks.push_back(std::make_shared<train::StochasticWeightAveraging>(
//       train::StochasticWeightAveragingOptions{.swa_lrs = {1e-2}, .swa_epoch_start = 0.75}));
//
// Lightning's timing, kept exactly: swa_epoch_start is a fraction of max_epochs or a 1-based
// epoch number, and SWA begins at 0-based epoch swa_start = max(start - 1, 0) (start =
// int(fraction * max_epochs) for a fraction). The average is updated at the START of epochs
// swa_start .. max_epochs - 1, so it holds the weights after epochs swa_start - 1 ..
// max_epochs - 2. The average replaces the weights only if training ran all max_epochs (an
// early stop leaves the last weights, as in Lightning). The average, its count and the SWA
// learning rates are saved in checkpoints (the averaged tensors base64-encoded in the callback's
// JSON state), so a resumed run continues the same average.
// Lightning recomputes BatchNorm statistics in an extra, forward-only training epoch (so its
// current_epoch ends one higher); athanor does the same pass inside on_train_end, through
// training_step under NoGradGuard with momentum unset (update_bn's cumulative average).
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "athanor/train/callback.h"

namespace ath::train {

struct StochasticWeightAveragingOptions {
  std::vector<double> swa_lrs;  // one for every param group, or one per group (required)
  std::variant<int64_t, double> swa_epoch_start = 0.8;  // 1-based epoch, or fraction in [0, 1]
  int64_t annealing_epochs = 10;
  std::string annealing_strategy = "cos";  // or "linear"
};

class StochasticWeightAveraging : public Callback {
 public:
  explicit StochasticWeightAveraging(StochasticWeightAveragingOptions options);

  std::string state_key() const override { return "StochasticWeightAveraging"; }
  nlohmann::json state_dict() const override;
  void load_state_dict(const nlohmann::json& state) override;

  void on_fit_start(Trainer& trainer, TrainingModule& module) override;
  void on_train_epoch_start(Trainer& trainer, TrainingModule& module) override;
  void on_train_batch_start(Trainer& trainer, TrainingModule& module, const data::Batch& batch,
                            int64_t batch_idx) override;
  void on_train_end(Trainer& trainer, TrainingModule& module) override;

  int64_t swa_start() const { return swa_start_; }  // 0-based
  int64_t swa_end() const { return swa_end_; }      // 0-based
  int64_t n_averaged() const { return n_averaged_; }
  // The running average, one tensor per module parameter (empty before the first update).
  const std::vector<Tensor>& averaged_parameters() const { return average_; }
  // The learning rate SWA gives group g in epoch `epoch` (>= swa_start).
  double swa_lr_at(std::size_t g, int64_t epoch) const;

 private:
  void apply_lrs(Trainer& trainer);
  void update_batch_norm(Trainer& trainer, TrainingModule& module);

  StochasticWeightAveragingOptions options_;
  int64_t swa_start_ = 0;
  int64_t swa_end_ = 0;
  std::vector<double> initial_lrs_;  // each group's lr when SWA began (SWALR's starting point)
  std::vector<Tensor> average_;
  int64_t n_averaged_ = 0;
  int64_t latest_update_epoch_ = -1;
  nlohmann::json pending_average_;  // loaded state, decoded once the module is known
};

}  // namespace ath::train
