// Autocast, the forward half of mixed precision: inside an AutocastGuard, the ops the registry
// marks AutocastPolicy::LowPrecision (mm, bmm, matmul, addmm, linear, convolution) run in
// bfloat16 or float16 — oneDNN's bf16 products run at about twice the float32 rate on
// AVX512-BF16 hosts — and the ops marked Float32 (softmax, log_softmax, the norms, the losses,
// the reductions, exp/log/pow) run in float32 whatever their inputs arrive in. Other ops run in
// the dtype of their inputs. The casts are ordinary differentiable ops, so gradients reach the
// float32 parameters (master weights) in float32; backward itself runs without autocast, in the
// dtypes forward chose. A parameter's cast is made once per outermost scope and reused
// (recast when the parameter is modified in place).
//
//   #include "athanor/nn/linear.h"
//   nn::Linear fc({.in = 8, .out = 4});
//   Tensor x = randn({16, 8});
//   Tensor loss;
//   {
//     AutocastGuard autocast(kBFloat16);
//     Tensor y = fc.forward(x);                    // linear ran in bfloat16
//     assert(y.dtype() == kBFloat16);
//     loss = log_softmax(y, 1).mean();             // log_softmax and mean ran in float32
//     assert(loss.dtype() == kFloat32);
//   }
//   loss.backward();
//   assert(fc.weight.grad().dtype() == kFloat32);  // the master weight's gradient
//
// PyTorch's equivalent is torch.autocast("cpu", dtype=torch.bfloat16). Float64 tensors are
// never cast (as in PyTorch).
#pragma once

#include <optional>

#include "athanor/core/dtype.h"

namespace ath {

// Turns autocast on with `dtype` (kBFloat16 or kFloat16; anything else is a ValueError) or, with
// std::nullopt, off, for this thread until the guard is destroyed. Guards nest.
class AutocastGuard {
 public:
  explicit AutocastGuard(std::optional<DType> dtype);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  std::optional<DType> previous_;
};

// The dtype autocast casts to on this thread, or std::nullopt when it is off.
std::optional<DType> autocast_dtype();

// Whether bfloat16 matmul and convolution run native bfloat16 kernels on this CPU (faster than
// float32: AMX-BF16, or AVX512-BF16 on Cooper Lake / Zen 4) or float32 kernels on exact copies
// (same results up to accumulation order, no faster). Decided once per process; the
// ATH_BF16_PRODUCTS=native|float32 environment variable overrides it. See
// docs/mixed-precision.md.
bool bf16_products_native();

}  // namespace ath
