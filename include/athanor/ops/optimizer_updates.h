// The optimizers' updates and gradient clipping as registry ops, so a tracer sees a training
// step whole and another device can run it. Each update is an in-place multi-tensor op: its
// inputs are equal-length tensor lists, concatenated (list 0 for every parameter, then list 1,
// ...), and it writes every list but the gradients. The step counters are 0-d float64 tensors
// the op advances itself, so a replayed step never bakes a step number in.
//
// The optimizers in athanor/optim call these; direct use looks like this:
//
//   Tensor p = ones({4}), g = full({4}, 0.5), m = zeros({4}), v = zeros({4});
//   Tensor step = zeros({}, kFloat64);
//   {
//     NoGradGuard no_grad;
//     Tensor inputs[] = {step, p, g, m, v};
//     call(op_adam_update(), TensorSpan(inputs), AdamUpdateAttrs{.lr = 0.1});
//   }
//   assert(step.item<double>() == 1);                          // the op advanced the counter
//   assert(std::abs(p.to_vector<float>()[0] - 0.9f) < 1e-6f);  // p - lr * sign(g) on step 1
//
// Every update keeps torch.optim 1.13's single-tensor float arithmetic, fused into one pass per
// parameter: trajectories are bit-identical to PyTorch's CPU updates. Inputs are checked before
// anything is written: parameters floating (all of one dtype), contiguous, each list entry
// shaped like its parameter and of its dtype, counters 0-d float64. bfloat16/float16
// parameters (bf16-true training) update in float32 arithmetic and are rounded back.
#pragma once

#include "athanor/ops/op.h"

namespace ath {

// Lists: params, grads, then momentum_buffer when momentum != 0. `first`: the buffers are new
// (PyTorch's first step sets the buffer to the gradient instead of decaying it).
struct SgdUpdateAttrs {
  double lr = 1e-3;
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false;
  bool maximize = false;
  bool first = false;
  int lists() const { return momentum != 0 ? 3 : 2; }
  bool operator==(const SgdUpdateAttrs&) const = default;
};
const Op<SgdUpdateAttrs>& op_sgd_update();

// Adam and AdamW (decoupled weight decay). Lists: step, params, grads, exp_avg, exp_avg_sq,
// then max_exp_avg_sq with amsgrad.
struct AdamUpdateAttrs {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;
  bool amsgrad = false;
  bool maximize = false;
  bool decoupled = false;
  int lists() const { return amsgrad ? 6 : 5; }
  bool operator==(const AdamUpdateAttrs&) const = default;
};
const Op<AdamUpdateAttrs>& op_adam_update();

// Lists: step, params, grads, exp_avg, exp_inf.
struct AdamaxUpdateAttrs {
  double lr = 2e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;
  bool maximize = false;
  int lists() const { return 5; }
  bool operator==(const AdamaxUpdateAttrs&) const = default;
};
const Op<AdamaxUpdateAttrs>& op_adamax_update();

// Lists: step, mu_product (0-d float64, holding PyTorch's float32 running product), params,
// grads, exp_avg, exp_avg_sq.
struct NAdamUpdateAttrs {
  double lr = 2e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;
  double momentum_decay = 4e-3;
  int lists() const { return 6; }
  bool operator==(const NAdamUpdateAttrs&) const = default;
};
const Op<NAdamUpdateAttrs>& op_nadam_update();

// Lists: step, params, grads, square_avg, then momentum_buffer when momentum > 0, then grad_avg
// when centered.
struct RMSpropUpdateAttrs {
  double lr = 1e-2;
  double alpha = 0.99;
  double eps = 1e-8;
  double weight_decay = 0;
  double momentum = 0;
  bool centered = false;
  bool maximize = false;
  int lists() const { return 4 + (momentum > 0 ? 1 : 0) + (centered ? 1 : 0); }
  bool operator==(const RMSpropUpdateAttrs&) const = default;
};
const Op<RMSpropUpdateAttrs>& op_rmsprop_update();

// Lists: step, params, grads, sum.
struct AdagradUpdateAttrs {
  double lr = 1e-2;
  double lr_decay = 0;
  double weight_decay = 0;
  double eps = 1e-10;
  bool maximize = false;
  int lists() const { return 4; }
  bool operator==(const AdagradUpdateAttrs&) const = default;
};
const Op<AdagradUpdateAttrs>& op_adagrad_update();

// The norm_type-norm of all inputs (gradients, any floating dtypes) taken together: a 0-d
// tensor of their promoted dtype. Each gradient's norm accumulates in double over fixed chunks
// (independent of the thread count) and, as in PyTorch, is rounded to its dtype before the
// total is formed. norm_type > 0, or infinity for the largest absolute value.
// grad_norm sums each gradient in chunks of this many elements (its workspace holds one double
// a chunk of the largest gradient).
inline constexpr int64_t kGradNormChunk = 4096;
struct GradNormAttrs {
  double norm_type = 2;
  bool operator==(const GradNormAttrs&) const = default;
};
const Op<GradNormAttrs>& op_grad_norm();

// Inputs: total_norm (from grad_norm), then gradients, which it scales in place by
// min(1, max_norm / (total_norm + 1e-6)) computed in the total's dtype (PyTorch's clamped
// clip_coef; nothing is written when it clamps to 1).
struct ClipByNormAttrs {
  double max_norm = 1;
  bool operator==(const ClipByNormAttrs&) const = default;
};
const Op<ClipByNormAttrs>& op_clip_grads_by_norm();

// The loss scaler's unscale (optim::GradScaler; PyTorch's
// _amp_foreach_non_finite_check_and_unscale_). Inputs: found_inf (0-d float32, written: set to
// 1 when any gradient element is inf or NaN, left as it is otherwise), inv_scale (0-d float32,
// read), then the gradients (any floating dtypes), each multiplied in place by inv_scale in
// float32 arithmetic (float64 for float64 gradients), in one pass that also checks them. The
// scale is an input, not an attribute, so a replayed step reads the scale of its own step.
struct UnscaleGradsAttrs {
  bool operator==(const UnscaleGradsAttrs&) const = default;
};
const Op<UnscaleGradsAttrs>& op_unscale_grads();

}  // namespace ath
