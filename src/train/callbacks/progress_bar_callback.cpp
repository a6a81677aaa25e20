// TQDMProgressBar: Trainer hooks -> ProgressBar stages.
#include "athanor/train/callbacks/progress_bar_callback.h"

#include <algorithm>

#include "athanor/train/trainer.h"

namespace ath::train {

TQDMProgressBar::TQDMProgressBar(ProgressBarOptions options) : options_(std::move(options)) {}

ProgressBar& TQDMProgressBar::bar(const Trainer& t) {
  if (!bar_) {
    ProgressBarOptions o = options_;
    if (o.refresh_every <= 0) o.refresh_every = t.options().log_every_n_steps;
    bar_ = std::make_unique<ProgressBar>(o);
  }
  return *bar_;
}

void TQDMProgressBar::on_train_epoch_start(Trainer& t, TrainingModule&) {
  bar(t).start_stage("train", t.current_epoch(), t.max_epochs(), t.num_training_batches());
}

void TQDMProgressBar::on_train_batch_end(Trainer& t, TrainingModule&, const Tensor&,
                                         const data::Batch&, int64_t batch_idx) {
  bar(t).update(batch_idx, t.progress_bar_metrics());
}

void TQDMProgressBar::on_train_epoch_end(Trainer& t, TrainingModule&) {
  bar(t).end_stage(t.progress_bar_metrics());
}

void TQDMProgressBar::on_validation_start(Trainer& t, TrainingModule&) {
  int64_t total = t.num_val_batches();
  if (t.sanity_checking()) {
    const int64_t n = t.options().num_sanity_val_steps;
    total = n < 0 || total < 0 ? total : std::min(n, total);
  }
  bar(t).start_stage(t.sanity_checking() ? "sanity_check" : "validate", t.current_epoch(),
                     t.max_epochs(), total);
}

void TQDMProgressBar::on_validation_batch_end(Trainer& t, TrainingModule&, const data::Batch&,
                                              int64_t batch_idx) {
  bar(t).update(batch_idx, t.progress_bar_metrics());
}

void TQDMProgressBar::on_validation_end(Trainer& t, TrainingModule&) {
  bar(t).end_stage(t.progress_bar_metrics());
}

// The test and predict bars show progress only, as Lightning's do: the bar metrics at hand are
// the training run's (a stale train_loss), and test() prints its results in a box afterwards.
void TQDMProgressBar::on_test_start(Trainer& t, TrainingModule&) {
  bar(t).start_stage("test", 0, 1, t.num_test_batches());
}

void TQDMProgressBar::on_test_batch_end(Trainer& t, TrainingModule&, const data::Batch&,
                                        int64_t batch_idx) {
  bar(t).update(batch_idx, {});
}

void TQDMProgressBar::on_test_end(Trainer& t, TrainingModule&) { bar(t).end_stage({}); }

void TQDMProgressBar::on_predict_start(Trainer& t, TrainingModule&) {
  bar(t).start_stage("predict", 0, 1, t.num_predict_batches());
}

void TQDMProgressBar::on_predict_batch_end(Trainer& t, TrainingModule&, const Tensor&,
                                           const data::Batch&, int64_t batch_idx) {
  bar(t).update(batch_idx, {});
}

void TQDMProgressBar::on_predict_end(Trainer& t, TrainingModule&) { bar(t).end_stage({}); }

}  // namespace ath::train
