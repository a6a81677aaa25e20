// The Trainer's precision settings beyond float32 (Lightning's precision plugins), chosen by
// name with TrainerOptions::precision (or --trainer.precision on the command line):
//
// - "32-true": float32 throughout (the default).
// - "bf16-mixed": autocast to bfloat16 around training, validation, test and predict steps;
//   float32 parameters (master weights), optimizer state and checkpoints.
// - "16-mixed": autocast to float16, plus a GradScaler (dynamic loss scaling: float16 gradients
//   would underflow); the scaler's state is saved in checkpoints.
// - "bf16-true" / "16-true": parameters, buffers and the floating tensors of each batch
//   converted to bfloat16 / float16: half the memory; the optimizer updates them in that dtype.
//
//   #include "athanor/train/trainer.h"
//   train::TrainerOptions opts;
//   opts.precision = "bf16-mixed";  // or opts.precision_plugin = train::make_precision("...")
//
// Where the CPU has no faster bfloat16 products (bf16_products_native() in ops/autocast.h),
// bf16 precisions give the same results through float32 kernels and say once (on stderr) that
// they will not be faster there. float16 products compute in float32
// and round (no CPU here has fast float16 GEMM), so 16-mixed is about numerics, not speed.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "athanor/core/dtype.h"
#include "athanor/optim/grad_scaler.h"
#include "athanor/train/precision.h"

namespace ath::train {

// "bf16-mixed" and "16-mixed": autocast around every step; with a scaler (16-mixed's default),
// the loss is scaled, the gradients unscaled before the hooks and clipping, and steps whose
// gradients are not finite are skipped.
class MixedPrecision : public PrecisionPlugin {
 public:
  // dtype: kBFloat16 or kFloat16. A scaler is made for float16 unless one is given.
  explicit MixedPrecision(DType dtype, std::optional<optim::GradScaler> scaler = std::nullopt);
  std::string name() const override;
  Tensor forward(const std::function<Tensor()>& step) override;
  void eval_step(const std::function<void()>& step) override;
  Tensor scale_loss(const Tensor& loss) override;
  void optimizer_step(optim::Optimizer& optimizer,
                      const std::function<void()>& before_step) override;
  nlohmann::json state_dict() const override;
  void load_state_dict(const nlohmann::json& state) override;

  DType dtype() const { return dtype_; }
  // The scaler (16-mixed), or null.
  const optim::GradScaler* scaler() const { return scaler_ ? &*scaler_ : nullptr; }
  // Steps skipped because the gradients were not finite, since construction.
  int64_t skipped_steps() const { return skipped_steps_; }

 private:
  DType dtype_;
  std::optional<optim::GradScaler> scaler_;
  int64_t skipped_steps_ = 0;
};

// "bf16-true" and "16-true": the module and the batches in the low-precision dtype.
class HalfPrecision : public PrecisionPlugin {
 public:
  explicit HalfPrecision(DType dtype);  // kBFloat16 or kFloat16
  std::string name() const override;
  void convert_module(nn::Module& module) override;
  std::optional<data::Batch> convert_input(const data::Batch& batch) override;

 private:
  DType dtype_;
};

// The plugin for one of the names above (ValueError listing them for any other).
std::shared_ptr<PrecisionPlugin> make_precision(const std::string& name);

}  // namespace ath::train
