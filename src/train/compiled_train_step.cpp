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

CompiledTrainStep::CompiledTrainStep(Trainer& trainer, StepRunner& runner)
    : trainer_(trainer),
      runner_(runner),
      compiled_(StepFn([this](const data::Batch& batch, bool first, int64_t accumulate, bool step) {
                  return eager_step(batch, first, accumulate, step);
                }),
                CompileOptions{}) {}

std::vector<Tensor> CompiledTrainStep::eager_step(const data::Batch& batch, bool first,
                                                  int64_t accumulate, bool step) {
  ran_eagerly_ = true;
  const int64_t defaults_before = detail::t_default_step_hooks;
  const int64_t calls_before = trainer_.step_hook_calls_;
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
  runner_.backward(loss, first ? 0 : 1, accumulate);
  if (step) runner_.optimizer_step();

  // Every hook call was a default one, or some hook is overridden and must run at every step.
  if (detail::t_default_step_hooks - defaults_before != trainer_.step_hook_calls_ - calls_before) {
    hooks_overridden_ = true;
    graph::Tracer::fail_active(
        "a callback or the module overrides a hook that runs inside the training step "
        "(on_before_zero_grad, on_before_backward, on_after_backward or "
        "on_before_optimizer_step); fit runs its steps eagerly so the hook runs at every step");
  }
  std::vector<Tensor> outputs{loss.detach()};
  for (const CapturedLog& l : capture_) outputs.push_back(l.value);
  // A replay needs the names and options, in order; the values come from the graph's outputs.
  std::vector<CapturedLog>& logs = logs_by_key_[batch_key(batch, first, accumulate, step)];
  logs = capture_;
  for (CapturedLog& l : logs) l.value = Tensor();
  return outputs;
}

void CompiledTrainStep::log_outputs(const std::vector<CapturedLog>& logs) {
  for (const CapturedLog& l : logs)
    trainer_.log_from_module(l.name, l.value.item<double>(), l.options);
}

Tensor CompiledTrainStep::run(const data::Batch& batch, int64_t batch_idx, int64_t position,
                              int64_t accumulate, bool step) {
  batch_idx_ = batch_idx;
  const bool first = position == 0;
  if (hooks_overridden_) {  // found while tracing an earlier step: eager from then on
    std::vector<Tensor> out = eager_step(batch, first, accumulate, step);
    log_outputs(capture_);
    return out.empty() ? Tensor() : out[0];
  }
  ran_eagerly_ = false;
  std::vector<Tensor> out = compiled_(batch, first, accumulate, step);
  if (ran_eagerly_) {
    log_outputs(capture_);
    return out.empty() ? Tensor() : out[0];
  }
  // A replay: the graph's outputs after the loss are the logged tensors, in the order the
  // traces of this key logged them.
  const std::vector<CapturedLog>& logs = logs_by_key_.at(batch_key(batch, first, accumulate, step));
  ATH_CHECK(out.size() == logs.size() + 1, ValueError,
            "Trainer (compile): the replayed step returned {} values for {} logged ones",
            out.size() - 1, logs.size());
  for (std::size_t i = 0; i < logs.size(); ++i)
    trainer_.log_from_module(logs[i].name, out[i + 1].item<double>(), logs[i].options);
  return out[0];
}

}  // namespace ath::train
