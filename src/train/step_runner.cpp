#include "step_runner.h"

#include <string_view>

#include "athanor/autograd/engine.h"
#include "athanor/core/error.h"
#include "athanor/graph/tracer.h"

namespace ath::train {

namespace {

optim::Optimizer& configured_optimizer(const Trainer& trainer) {
  ATH_CHECK(trainer.optimizer() != nullptr, ValueError,
            "Trainer: no optimizer yet (training steps run inside fit, after "
            "configure_optimizers)");
  return *trainer.optimizer();
}

void run_backward(const Tensor& start) {
  try {
    backward({start});
  } catch (AutogradError& e) {
    // The usual cause is a backward() inside training_step: the autograd message's remedy
    // (retain_graph) would be the wrong one here.
    if (std::string_view(e.what()).find("a second time") != std::string_view::npos) {
      e.prepend(
          "Trainer: the loss training_step returned was already backpropagated. Under automatic "
          "optimization the Trainer runs backward itself: remove the backward() call from "
          "training_step (or call set_automatic_optimization(false) and use manual_backward). "
          "Autograd said: ");
    }
    throw;
  }
}

}  // namespace

StepRunner::StepRunner(Trainer& trainer, TrainingModule& module, StepHooks hooks)
    : trainer_(trainer),
      module_(module),
      optimizer_(configured_optimizer(trainer)),
      hooks_(std::move(hooks)) {}

Tensor StepRunner::training_step(const data::Batch& batch, int64_t batch_idx) {
  PrecisionPlugin& precision = trainer_.precision();
  std::optional<data::Batch> converted = precision.convert_input(batch);
  const data::Batch& input = converted ? *converted : batch;
  return precision.forward([&] { return module_.training_step(input, batch_idx); });
}

void StepRunner::check_loss(const Tensor& loss) const {
  ATH_CHECK(loss.numel() == 1, ShapeError,
            "Trainer: training_step must return a one-element loss, got shape {}", loss.shape());
  ATH_CHECK(loss.requires_grad(), AutogradError,
            "Trainer: the loss training_step returned does not require grad (was it computed "
            "under NoGradGuard, or from detached tensors?)");
}

void StepRunner::backward(const Tensor& loss, int64_t position, int64_t accumulate,
                          PostHooks post_hooks) {
  if (position == 0) {
    if (hooks_.on_before_zero_grad) {
      graph::Tracer::Pause hook_runs_eagerly;
      hooks_.on_before_zero_grad(optimizer_);
    }
    optimizer_.zero_grad();
  }
  Tensor scaled = accumulate > 1 ? loss / static_cast<double>(accumulate) : loss;
  scaled = trainer_.precision().scale_loss(scaled);
  if (hooks_.on_before_backward) {
    graph::Tracer::Pause hook_runs_eagerly;
    hooks_.on_before_backward(scaled);
  }
  if (trainer_.options().detect_anomaly) {
    DetectAnomalyGuard anomaly;
    run_backward(scaled);
  } else {
    run_backward(scaled);
  }
  if (post_hooks == PostHooks::Inside) on_after_backward();
}

void StepRunner::on_after_backward() {
  graph::Tracer::Pause hook_runs_eagerly;
  if (hooks_.on_after_backward) hooks_.on_after_backward();
}

void StepRunner::on_before_optimizer_step() {
  graph::Tracer::Pause hook_runs_eagerly;
  if (hooks_.on_before_optimizer_step) hooks_.on_before_optimizer_step(optimizer_);
}

void StepRunner::optimizer_step(PostHooks post_hooks) {
  trainer_.strategy().reduce_gradients(optimizer_);
  const TrainerOptions& o = trainer_.options();
  // As Lightning: the hook and the clipping see the gradients the optimizer will use (reduced
  // across ranks, unscaled by the precision plugin).
  Strategy& strategy = trainer_.strategy();
  trainer_.precision().optimizer_step(optimizer_, [&] {
    if (post_hooks == PostHooks::Inside) on_before_optimizer_step();
    module_.configure_gradient_clipping(optimizer_, o.gradient_clip_val, o.gradient_clip_algorithm);
    strategy.before_optimizer_step(optimizer_);  // after clipping: it saw every gradient
  });
  strategy.after_optimizer_step(optimizer_);
}

}  // namespace ath::train
