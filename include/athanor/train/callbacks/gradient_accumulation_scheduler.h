// GradientAccumulationScheduler: Lightning's callback — changes accumulate_grad_batches by epoch.
//
//   // 4 batches per optimizer step for epochs 0-3, 2 for epochs 4-7, then 1
//   auto accum = std::make_shared<train::GradientAccumulationScheduler>(
//       std::map<int64_t, int64_t>{{0, 4}, {4, 2}, {8, 1}});
//
// Keys are 0-based epochs (>= 0), values factors (>= 1); an epoch uses the factor of the largest
// key not above it, and epochs before the smallest key use 1. The Trainer's own
// accumulate_grad_batches must stay 1, and manual optimization is refused (as in Lightning).
#pragma once

#include <cstdint>
#include <map>

#include "athanor/train/callback.h"

namespace ath::train {

class GradientAccumulationScheduler : public Callback {
 public:
  explicit GradientAccumulationScheduler(std::map<int64_t, int64_t> scheduling);

  std::string state_key() const override { return "GradientAccumulationScheduler"; }
  void on_train_start(Trainer& trainer, TrainingModule& module) override;
  void on_train_epoch_start(Trainer& trainer, TrainingModule& module) override;

  int64_t get_accumulate_grad_batches(int64_t epoch) const;
  const std::map<int64_t, int64_t>& scheduling() const { return scheduling_; }

 private:
  std::map<int64_t, int64_t> scheduling_;
};

}  // namespace ath::train
