// How a compiled training step learns whether anyone overrides the hooks that run inside it
// (on_before_zero_grad, on_before_backward, on_after_backward, on_before_optimizer_step): the
// default implementations count themselves here. A traced step whose hook calls outnumber the
// defaults that ran has an override, and the Trainer then runs those steps eagerly, so the hook
// runs at every step as in Lightning instead of only while the step is traced.
//
//   #include "athanor/train/training_module.h"
//   struct Probe : train::TrainingModule {
//     Probe() : TrainingModule("Probe") {}
//     Tensor training_step(const data::Batch&, int64_t) override { return {}; }
//     train::OptimizerConfig configure_optimizers() override { return {}; }
//   };
//   Probe m;
//   int64_t before = train::detail::t_default_step_hooks;
//   m.on_after_backward();                                  // the default: counts itself
//   assert(train::detail::t_default_step_hooks == before + 1);
#pragma once

#include <cstdint>

namespace ath::train::detail {

inline thread_local int64_t t_default_step_hooks = 0;

}  // namespace ath::train::detail
