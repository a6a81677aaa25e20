// GradientAccumulationScheduler (see the header).
#include "athanor/train/callbacks/gradient_accumulation_scheduler.h"

#include "athanor/core/error.h"
#include "athanor/train/trainer.h"

namespace ath::train {

GradientAccumulationScheduler::GradientAccumulationScheduler(std::map<int64_t, int64_t> scheduling)
    : scheduling_(std::move(scheduling)) {
  ATH_CHECK(!scheduling_.empty(), ValueError,
            "GradientAccumulationScheduler: the scheduling map is empty");
  for (const auto& [epoch, factor] : scheduling_) {
    ATH_CHECK(epoch >= 0, ValueError,
              "GradientAccumulationScheduler: epochs are 0-based and must be >= 0, got {}", epoch);
    ATH_CHECK(factor >= 1, ValueError,
              "GradientAccumulationScheduler: the factor for epoch {} must be >= 1, got {}", epoch,
              factor);
  }
  // Lightning: epochs before the first scheduled one accumulate nothing.
  scheduling_.emplace(0, 1);
}

int64_t GradientAccumulationScheduler::get_accumulate_grad_batches(int64_t epoch) const {
  auto it = scheduling_.upper_bound(epoch);
  return it == scheduling_.begin() ? 1 : std::prev(it)->second;
}

void GradientAccumulationScheduler::on_train_start(Trainer& trainer, TrainingModule& module) {
  ATH_CHECK(module.automatic_optimization(), ValueError,
            "GradientAccumulationScheduler: not supported with manual optimization (accumulate "
            "in training_step yourself)");
  ATH_CHECK(trainer.options().accumulate_grad_batches == 1, ValueError,
            "GradientAccumulationScheduler: the Trainer's accumulate_grad_batches is {}; leave "
            "it at 1 when the callback schedules accumulation",
            trainer.options().accumulate_grad_batches);
}

void GradientAccumulationScheduler::on_train_epoch_start(Trainer& trainer, TrainingModule&) {
  trainer.set_accumulate_grad_batches(get_accumulate_grad_batches(trainer.current_epoch()));
}

}  // namespace ath::train
