// CompiledTrainStep: fit's automatic-optimization step under ath::compile (TrainerOptions::
// compile). One call is one batch: training_step, the loss checks, backward (zeroing the
// gradients first on a window's first micro-batch), and — on a window's last — gradient
// reduction, clipping and the optimizer step, exactly as StepRunner runs them eagerly.
//
// What keeps a replay faithful:
// - Cache key: the batch's tensors (shapes, dtypes), whether this micro-batch zeroes the
//   gradients, the accumulation count (the loss is divided by it) and whether it steps; so an
//   accumulation window compiles at most a few graphs, and a smaller last batch its own.
// - log() of a tensor inside training_step is captured: the tensor becomes an output of the
//   graph and is logged after the step, on replays too. log() of a host number cannot be
//   replayed: that step runs eagerly (the trace fails with a diagnostic).
// - The hooks inside the step would run only while a step is traced, so a traced step checks
//   whether a callback or the module overrides one (step_hook_probe.h tells), and the fit keeps
//   Lightning's semantics, after one diagnostic:
//   - on_after_backward or on_before_optimizer_step: the step is split there. Forward and
//     backward replay as one graph; the hooks, clipping and the optimizer step then run
//     eagerly, at every step.
//   - on_before_zero_grad or on_before_backward: they run between the forward and its backward,
//     which must stay one graph (a replay's loss carries no autograd history to backpropagate
//     later), so every step runs eagerly.
// - A data-parallel strategy reduces gradients outside the op registry (its hooks pause the
//   trace): its steps are split from the start. Forward and backward replay as one graph, then
//   the strategy launches the gradient all-reduces (Strategy::after_replayed_backward), and the
//   reduction, hooks, clipping and optimizer step run eagerly. Communication inside the step
//   itself (SyncBatchNorm) fails the trace: such a step runs eagerly, with a diagnostic.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "athanor/graph/compile.h"
#include "athanor/train/trainer.h"
#include "step_runner.h"

namespace ath::train {

struct CapturedLog {
  std::string name;
  LogOptions options;
  Tensor value;
};

class CompiledTrainStep {
 public:
  // split: start in Split mode (a data-parallel strategy's gradient reduction runs eagerly
  // after the replayed backward).
  CompiledTrainStep(Trainer& trainer, StepRunner& runner, bool split = false);

  // Runs micro-batch `position` (0-based) of a window of `accumulate`, stepping when `step`;
  // returns the loss (without autograd history).
  Tensor run(const data::Batch& batch, int64_t batch_idx, int64_t position, int64_t accumulate,
             bool step);
  // The whole step's graphs and, once split, the forward-and-backward ones, counted together.
  const CompileStats& stats() const;
  // Frees the compiled graphs' arenas until the next training step (before validation).
  void release_memory() {
    compiled_.release_memory();
    forward_backward_.release_memory();
  }

 private:
  // Whole: one graph per key for everything. Split: forward and backward compiled, the rest
  // eager (an after-backward hook is overridden). Eager: nothing compiled (a hook before the
  // backward is overridden).
  enum class Mode { Whole, Split, Eager };
  using StepFn = std::function<std::vector<Tensor>(const data::Batch&, bool, int64_t, bool)>;
  std::vector<Tensor> eager_step(const data::Batch& batch, bool first, int64_t accumulate,
                                 bool step);
  // training_step, the loss checks and the backward, capturing what the step logs; returns the
  // loss (detached) and the logged tensors. Detects an overridden hook before the backward.
  std::vector<Tensor> forward_backward(const data::Batch& batch, bool first, int64_t accumulate,
                                       const std::string& key);
  // Runs `fn` (the whole step or its forward and backward) compiled and logs what it logged.
  Tensor run_compiled(Compiled<StepFn>& fn, const data::Batch& batch, bool first,
                      int64_t accumulate, bool step, const std::string& key);
  void log_outputs(const std::vector<CapturedLog>& logs);

  Trainer& trainer_;
  StepRunner& runner_;
  int64_t batch_idx_ = 0;     // training_step's argument for the call in flight
  bool ran_eagerly_ = false;  // the call in flight ran the step function (traced or eager)
  Mode mode_ = Mode::Whole;
  std::vector<CapturedLog> capture_;
  // The names and options each key's step logs, in order (its graph's outputs after the loss;
  // values are not kept).
  std::map<std::string, std::vector<CapturedLog>> logs_by_key_;
  Compiled<StepFn> compiled_;          // Mode::Whole
  Compiled<StepFn> forward_backward_;  // Mode::Split
  mutable CompileStats stats_;         // both, merged by stats()
};

}  // namespace ath::train
