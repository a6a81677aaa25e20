// Internal: what the tuning callbacks (LearningRateFinder, BatchSizeFinder) put back after their
// trial runs — the module's parameters and buffers, the optimizer's options and state, the global
// RNG position and the module's train/eval mode — so the real run starts exactly as if they had
// never run.
#pragma once

#include "athanor/core/rng.h"
#include "athanor/optim/optimizer.h"
#include "athanor/tensor/grad_mode.h"
#include "athanor/train/training_module.h"

namespace ath::train::detail {

class TrainingSnapshot {
 public:
  TrainingSnapshot(TrainingModule& module, optim::Optimizer& opt)
      : module_(module), opt_(opt), training_(module.is_training()) {
    // state_dict() tensors share storage with the live ones: copy them.
    for (const auto& [k, t] : module.state_dict()) module_state_.insert(k, t.clone());
    opt_state_ = opt.state_dict();
    StateDict copies;
    for (const auto& [k, t] : opt_state_.tensors) copies.insert(k, t.clone());
    opt_state_.tensors = std::move(copies);
    const Generator& g = default_generator();
    seed_ = g.seed();
    offset_ = g.offset();
  }

  void restore() {
    module_.load_state_dict(module_state_, /*strict=*/true);
    module_.zero_grad();
    opt_.load_state_dict(opt_state_);
    Generator& g = default_generator();
    g.manual_seed(seed_);
    g.set_offset(offset_);
    module_.train(training_);
  }

 private:
  TrainingModule& module_;
  optim::Optimizer& opt_;
  bool training_;
  StateDict module_state_;
  optim::OptimizerState opt_state_;
  uint64_t seed_ = 0;
  uint64_t offset_ = 0;
};

}  // namespace ath::train::detail
