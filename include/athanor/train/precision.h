// PrecisionPlugin: how the numbers of a training step are handled (Lightning's precision
// plugin). Every training step, in fit and in the tuners (LearningRateFinder, BatchSizeFinder),
// runs through one step runner that calls the Trainer's plugin at three points: around
// training_step (where autocast goes), on the loss backward starts from (where a loss scaler
// multiplies) and at the optimizer step (where a scaler unscales the gradients before the
// on_before_optimizer_step hooks and clipping, and skips the step when they are not finite).
// Float32Precision ("32-true", the default) changes nothing; mixed precision plugs in here
// (mixed_precision.h: MixedPrecision, HalfPrecision, make_precision). A plugin also converts the
// module before a run and each batch before its step (the "-true" precisions), wraps the
// evaluation steps (autocast) and keeps its own state in checkpoints (a loss scaler's).
// Manual optimization (manual_backward and the module's own optimizer().step()) does not pass
// through the plugin yet: a plugin that scales the loss needs automatic optimization.
//
//   #include "athanor/train/trainer.h"
//   // Backpropagates 1024 * loss and divides the gradients back before the hooks and clipping:
//   // a fixed loss scale (a power of two: float32 results are bit-identical to no scaling).
//   struct FixedLossScale : train::Float32Precision {
//     std::string name() const override { return "32-true, loss scale 1024"; }
//     Tensor scale_loss(const Tensor& loss) override { return loss * 1024.0; }
//     void optimizer_step(optim::Optimizer& opt, const std::function<void()>& before) override {
//       NoGradGuard no_grad;
//       for (std::size_t g = 0; g < opt.num_param_groups(); ++g)
//         for (const Tensor& p : opt.params(g))
//           if (p.grad().defined()) p.grad().mul_(1.0 / 1024);
//       before();  // the hooks and clipping see true gradients
//       opt.step();
//     }
//   };
//   train::TrainerOptions opts;
//   opts.precision_plugin = std::make_shared<FixedLossScale>();
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "athanor/data/batch.h"
#include "athanor/nn/module.h"
#include "athanor/optim/optimizer.h"
#include "athanor/tensor/tensor.h"

namespace ath::train {

class PrecisionPlugin {
 public:
  virtual ~PrecisionPlugin() = default;
  // What Lightning's `precision` flag would say: "32-true", "bf16-mixed", ...
  virtual std::string name() const = 0;
  // Runs training_step (`step`): an autocast scope goes around it here.
  virtual Tensor forward(const std::function<Tensor()>& step) { return step(); }
  // The tensor backward starts from, given the loss (already divided for accumulation).
  virtual Tensor scale_loss(const Tensor& loss) { return loss; }
  // Steps the optimizer on the gradients of a finished accumulation window. `before_step` runs
  // the on_before_optimizer_step hooks and the module's configure_gradient_clipping: call it
  // once, on the true (unscaled) gradients, before optimizer.step().
  virtual void optimizer_step(optim::Optimizer& optimizer,
                              const std::function<void()>& before_step) {
    before_step();
    optimizer.step();
  }
  // Runs a validation, test or predict step.
  virtual void eval_step(const std::function<void()>& step) { step(); }
  // Converts the module at the start of fit/validate/test/predict, before configure_optimizers.
  virtual void convert_module(nn::Module& /*module*/) {}
  // The batch a step sees, or nullopt for the batch as it is.
  virtual std::optional<data::Batch> convert_input(const data::Batch& /*batch*/) {
    return std::nullopt;
  }
  // What the plugin keeps in checkpoints (an empty object: nothing), and its restore.
  virtual nlohmann::json state_dict() const { return nlohmann::json::object(); }
  virtual void load_state_dict(const nlohmann::json& /*state*/) {}
};

// Full float32: every hook as the base class leaves it.
class Float32Precision : public PrecisionPlugin {
 public:
  std::string name() const override { return "32-true"; }
};

}  // namespace ath::train
