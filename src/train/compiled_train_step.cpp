#include "compiled_train_step.h"

#include <fmt/format.h>

#include "athanor/core/error.h"
#include "athanor/graph/tracer.h"
#include "athanor/train/step_hook_probe.h"
#include "trainer_hooks.h"

namespace ath::train {

namespace {

std::string batch_key(const data::Batch& batch, bool first, int64_t accumulate, bool step) {
  std::string key = fmt::format("{}/{}/{}", first, accumulate, step);
  if (batch.holds<data::TensorList>()) {
    for (const Tensor& t : batch.as<data::TensorList>())
      key += fmt::format("|{}:{}", t.shape(), t.dtype());
  }
  return key;
}

}  // namespace

// Whether any of the step hooks called since the counts were taken was an override.
// (The Trainer counts every hook call it makes; default implementations count themselves.)
struct HookProbe {
  int64_t defaults = detail::t_default_step_hooks;
  int64_t calls;
  explicit HookProbe(int64_t calls_now) : calls(calls_now) {}
  bool overridden(int64_t calls_now) const {
    return detail::t_default_step_hooks - defaults != calls_now - calls;
  }
};

CompiledTrainStep::CompiledTrainStep(Trainer& trainer, StepRunner& runner, bool split)
    : trainer_(trainer),
      runner_(runner),
      compiled_(StepFn([this](const data::Batch& batch, bool first, int64_t accumulate, bool step) {
                  return eager_step(batch, first, accumulate, step);
                }),
                CompileOptions{}),
      forward_backward_(
          StepFn([this](const data::Batch& batch, bool first, int64_t accumulate, bool) {
            return forward_backward(batch, first, accumulate,
                                    "fb/" + batch_key(batch, first, accumulate, false));
          }),
          // Each gradient as the replayed backward makes it: a data-parallel strategy starts
          // its all-reduce there, overlapping the rest of the backward.
          CompileOptions{.on_gradient_ready = [this](const Tensor& p) {
            trainer_.strategy().replayed_gradient_ready(p);
          }}) {
  if (split) mode_ = Mode::Split;
}

const CompileStats& CompiledTrainStep::stats() const {
  stats_ = compiled_.stats();
  const CompileStats& fb = forward_backward_.stats();
  stats_.calls += fb.calls;
  stats_.replays += fb.replays;
  stats_.traces += fb.traces;
  stats_.eager_calls += fb.eager_calls;
  stats_.graphs += fb.graphs;
  stats_.trace_seconds += fb.trace_seconds;
  stats_.pass_seconds += fb.pass_seconds;
  stats_.diagnostics.insert(stats_.diagnostics.end(), fb.diagnostics.begin(), fb.diagnostics.end());
  return stats_;
}

std::vector<Tensor> CompiledTrainStep::forward_backward(const data::Batch& batch, bool first,
                                                        int64_t accumulate,
                                                        const std::string& key) {
  ran_eagerly_ = true;
  capture_.clear();
  trainer_.log_capture_ = &capture_;
  struct StopCapture {
    Trainer& t;
    ~StopCapture() { t.log_capture_ = nullptr; }
  } stop{trainer_};

  Tensor loss = run_module_step("training_step", batch_idx_, trainer_.train_.get(),
                                [&] { return runner_.training_step(batch, batch_idx_); });
  if (!loss.defined()) {  // Lightning: no loss, no backward and no step for this batch
    graph::Tracer::fail_active("training_step returned no loss for this batch");
    return {};
  }
  runner_.check_loss(loss);
  const HookProbe before_backward(trainer_.step_hook_calls_);
  runner_.backward(loss, first ? 0 : 1, accumulate, StepRunner::PostHooks::Caller);
  if (before_backward.overridden(trainer_.step_hook_calls_)) {
    mode_ = Mode::Eager;
    graph::Tracer::fail_active(
        "a callback or the module overrides on_before_zero_grad or on_before_backward, which run "
        "between the forward and its backward (one graph: a replayed loss has no autograd "
        "history); fit runs its steps eagerly so the hook runs at every step");
  }
  std::vector<Tensor> outputs{loss.detach()};
  for (const CapturedLog& l : capture_) outputs.push_back(l.value);
  // A replay needs the names and options, in order; the values come from the graph's outputs.
  std::vector<CapturedLog>& logs = logs_by_key_[key];
  logs = capture_;
  for (CapturedLog& l : logs) l.value = Tensor();
  return outputs;
}

std::vector<Tensor> CompiledTrainStep::eager_step(const data::Batch& batch, bool first,
                                                  int64_t accumulate, bool step) {
  std::vector<Tensor> outputs =
      forward_backward(batch, first, accumulate, batch_key(batch, first, accumulate, step));
  if (outputs.empty()) return outputs;
  const HookProbe after_backward(trainer_.step_hook_calls_);
  runner_.on_after_backward();
  if (step) runner_.optimizer_step();
  if (mode_ == Mode::Whole && after_backward.overridden(trainer_.step_hook_calls_)) {
    mode_ = Mode::Split;
    graph::Tracer::fail_active(
        "a callback or the module overrides on_after_backward or on_before_optimizer_step: the "
        "step is split there, forward and backward compiled, the hooks, clipping and the "
        "optimizer step run eagerly at every step");
  }
  return outputs;
}

void CompiledTrainStep::log_outputs(const std::vector<CapturedLog>& logs) {
  for (const CapturedLog& l : logs)
    trainer_.log_from_module(l.name, l.value.item<double>(), l.options);
}

Tensor CompiledTrainStep::run_compiled(Compiled<StepFn>& fn, const data::Batch& batch, bool first,
                                       int64_t accumulate, bool step, const std::string& key) {
  ran_eagerly_ = false;
  std::vector<Tensor> out = fn(batch, first, accumulate, step);
  if (ran_eagerly_) {
    log_outputs(capture_);
    return out.empty() ? Tensor() : out[0];
  }
  // A replay: the graph's outputs after the loss are the logged tensors, in the order the
  // traces of this key logged them.
  const std::vector<CapturedLog>& logs = logs_by_key_.at(key);
  ATH_CHECK(out.size() == logs.size() + 1, ValueError,
            "Trainer (compile): the replayed step returned {} values for {} logged ones",
            out.size() - 1, logs.size());
  for (std::size_t i = 0; i < logs.size(); ++i)
    trainer_.log_from_module(logs[i].name, out[i + 1].item<double>(), logs[i].options);
  return out[0];
}

Tensor CompiledTrainStep::run(const data::Batch& batch, int64_t batch_idx, int64_t position,
                              int64_t accumulate, bool step) {
  batch_idx_ = batch_idx;
  const bool first = position == 0;
  switch (mode_) {
    case Mode::Whole:
      return run_compiled(compiled_, batch, first, accumulate, step,
                          batch_key(batch, first, accumulate, step));
    case Mode::Split: {
      Tensor loss = run_compiled(forward_backward_, batch, first, accumulate, step,
                                 "fb/" + batch_key(batch, first, accumulate, false));
      if (!loss.defined()) return loss;
      if (!ran_eagerly_) trainer_.strategy().after_replayed_backward();
      runner_.on_after_backward();
      if (step) runner_.optimizer_step();
      return loss;
    }
    case Mode::Eager: {
      std::vector<Tensor> out = eager_step(batch, first, accumulate, step);
      log_outputs(capture_);
      return out.empty() ? Tensor() : out[0];
    }
  }
  return {};
}

}  // namespace ath::train
