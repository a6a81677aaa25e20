// StepRunner: the training step of automatic optimization, written once. fit's loop,
// LearningRateFinder and BatchSizeFinder all run their steps through it, so they zero, scale,
// backpropagate, reduce, clip and step the same way, through the Trainer's PrecisionPlugin
// (loss scaling, autocast) and Strategy (gradient reduction across processes):
//
//   window of `accumulate` micro-batches:
//     first micro-batch: on_before_zero_grad, optimizer.zero_grad()
//     each: precision.scale_loss(loss / accumulate) -> on_before_backward -> backward
//           -> on_after_backward
//   then: strategy.reduce_gradients, precision.optimizer_step(optimizer, before_step), where
//         before_step = on_before_optimizer_step + module.configure_gradient_clipping(
//         gradient_clip_val, gradient_clip_algorithm), run on the true (unscaled) gradients
//
// The hooks run outside any trace (graph::Tracer::Pause): a compiled step never records them; it
// detects overrides and splits the step there (compiled_train_step.h).
// The hooks are fit's (callbacks, then the module); the tuners pass none, as their steps are
// not training steps a callback should see. Counting steps and stepping schedulers stay with
// the caller.
#pragma once

#include <cstdint>
#include <functional>

#include "athanor/data/batch.h"
#include "athanor/train/trainer.h"

namespace ath::train {

struct StepHooks {
  std::function<void(optim::Optimizer&)> on_before_zero_grad;
  std::function<void(const Tensor&)> on_before_backward;
  std::function<void()> on_after_backward;
  std::function<void(optim::Optimizer&)> on_before_optimizer_step;
};

class StepRunner {
 public:
  // The trainer's optimizer, precision plugin, strategy and options (clipping, detect_anomaly);
  // all must outlive the runner.
  StepRunner(Trainer& trainer, TrainingModule& module, StepHooks hooks = {});

  // training_step through the precision plugin's forward.
  Tensor training_step(const data::Batch& batch, int64_t batch_idx);
  // What automatic optimization needs of training_step's loss: one element, with a gradient
  // path. Throws ShapeError / AutogradError saying what is wrong.
  void check_loss(const Tensor& loss) const;
  // Where the hooks after the backward run: inside backward() and optimizer_step() (Inside), or
  // left to the caller (Caller), which runs them through the two calls below — a compiled step
  // split at those hooks (compiled_train_step.h) replays what lies between them.
  enum class PostHooks { Inside, Caller };
  // Backpropagates micro-batch `position` (0-based) of a window of `accumulate`: zeroes the
  // gradients first when position is 0, and backpropagates loss / accumulate.
  void backward(const Tensor& loss, int64_t position, int64_t accumulate,
                PostHooks post_hooks = PostHooks::Inside);
  // Reduces, clips and steps on the window's gradients.
  void optimizer_step(PostHooks post_hooks = PostHooks::Inside);
  void on_after_backward();
  void on_before_optimizer_step();

 private:
  Trainer& trainer_;
  TrainingModule& module_;
  optim::Optimizer& optimizer_;
  StepHooks hooks_;
};

}  // namespace ath::train
