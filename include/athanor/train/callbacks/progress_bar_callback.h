// TQDMProgressBar: the callback that drives train::ProgressBar from the Trainer's hooks — one
// live line per stage on a terminal, one plain line per log interval elsewhere (progress_bar.h).
// Added by default (TrainerOptions::enable_progress_bar); add your own to change the options.
//
//   #include "athanor/train/trainer.h"
//   train::TrainerOptions opts;
//   opts.callbacks.push_back(
//       std::make_shared<train::TQDMProgressBar>(train::ProgressBarOptions{.ascii = true}));
#pragma once

#include <memory>

#include "athanor/train/callback.h"
#include "athanor/train/progress_bar.h"

namespace ath::train {

class TQDMProgressBar : public Callback {
 public:
  // refresh_every = 0 takes the Trainer's log_every_n_steps.
  explicit TQDMProgressBar(ProgressBarOptions options = {.refresh_every = 0});

  std::string state_key() const override { return "TQDMProgressBar"; }
  // Runs after the module's on_train_epoch_end, so the epoch line shows the epoch's metrics.
  bool is_monitoring() const override { return true; }

  void on_train_epoch_start(Trainer& t, TrainingModule& m) override;
  void on_train_batch_end(Trainer& t, TrainingModule& m, const Tensor& loss, const data::Batch& b,
                          int64_t batch_idx) override;
  void on_train_epoch_end(Trainer& t, TrainingModule& m) override;
  void on_validation_start(Trainer& t, TrainingModule& m) override;
  void on_validation_batch_end(Trainer& t, TrainingModule& m, const data::Batch& b,
                               int64_t batch_idx) override;
  void on_validation_end(Trainer& t, TrainingModule& m) override;
  void on_test_start(Trainer& t, TrainingModule& m) override;
  void on_test_batch_end(Trainer& t, TrainingModule& m, const data::Batch& b,
                         int64_t batch_idx) override;
  void on_test_end(Trainer& t, TrainingModule& m) override;
  void on_predict_start(Trainer& t, TrainingModule& m) override;
  void on_predict_batch_end(Trainer& t, TrainingModule& m, const Tensor& out, const data::Batch& b,
                            int64_t batch_idx) override;
  void on_predict_end(Trainer& t, TrainingModule& m) override;

 private:
  ProgressBar& bar(const Trainer& t);

  ProgressBarOptions options_;
  std::unique_ptr<ProgressBar> bar_;
};

}  // namespace ath::train
