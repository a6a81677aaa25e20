// Activation functions: elementwise nonlinearities with PyTorch's formulas and defaults.
//
//   Tensor x = randn({2, 3});
//   Tensor h = relu(x);                          // keeps the dtype; integers allowed
//   Tensor k = relu(arange(-2, 2));              // int64 [0, 0, 0, 1]
//   Tensor g = gelu(x, GeluApprox::Tanh);        // F.gelu(x, approximate="tanh")
//   Tensor s = softplus(x, /*beta=*/2, /*threshold=*/20);
//   Tensor c = hardtanh(x, -2, 2);
//   assert(k.dtype() == kInt64 && k.to_vector<int64_t>()[3] == 1);
//
// All but relu and hardtanh need a floating tensor (as torch's CPU kernels do); 16-bit floats
// compute in float32. Gradients are written with other registered ops, so they are themselves
// differentiable (double backward).
#pragma once

#include "athanor/ops/op.h"

namespace ath {

Tensor relu(const Tensor& x);
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
// scale * (x > 0 ? x : alpha * (exp(x) - 1)).
Tensor elu(const Tensor& x, double alpha = 1.0);
Tensor selu(const Tensor& x);  // elu with torch's fixed alpha and scale
enum class GeluApprox { None, Tanh };
Tensor gelu(const Tensor& x, GeluApprox approximate = GeluApprox::None);
Tensor silu(const Tensor& x);  // x * sigmoid(x)
Tensor mish(const Tensor& x);  // x * tanh(softplus(x))
// log(1 + exp(beta * x)) / beta, linear where beta * x > threshold.
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0);
// Integers clamp with the bounds truncated to integers (as torch); bool is refused, and uint8
// with a negative bound.
Tensor hardtanh(const Tensor& x, const Scalar& min_val = -1, const Scalar& max_val = 1);
Tensor hardsigmoid(const Tensor& x);  // relu6(x + 3) / 6
Tensor hardswish(const Tensor& x);    // x * relu6(x + 3) / 6

inline constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
inline constexpr double kSeluScale = 1.0507009873554804934193349852946;

struct LeakyReluAttrs {
  double negative_slope = 0.01;
  bool operator==(const LeakyReluAttrs&) const = default;
};
struct EluAttrs {
  double alpha = 1.0;
  double scale = 1.0;
  bool operator==(const EluAttrs&) const = default;
};
struct GeluAttrs {
  GeluApprox approximate = GeluApprox::None;
  bool operator==(const GeluAttrs&) const = default;
};
struct SoftplusAttrs {
  double beta = 1.0;
  double threshold = 20.0;
  bool operator==(const SoftplusAttrs&) const = default;
};
struct HardtanhAttrs {
  Scalar min_val = -1;
  Scalar max_val = 1;
  bool operator==(const HardtanhAttrs&) const = default;
};

const Op<NoAttrs>& op_relu();
const Op<LeakyReluAttrs>& op_leaky_relu();
const Op<EluAttrs>& op_elu();  // selu is elu with kSeluAlpha, kSeluScale
const Op<GeluAttrs>& op_gelu();
// gelu_backward(g, x) = g * (Phi(x) + x * phi(x)): the exact GELU's gradient in one fused pass
// (the tanh approximation's gradient stays a composition).
const Op<GeluAttrs>& op_gelu_backward();
// (g, x) -> (gelu_backward(g, x), gelu(x)): both from one read of x and one Phi(x), with the bits
// of the two ops; the gradient may be written over g (as gelu_backward's). The graph compiler's
// gelu_pair pass makes it where a training step's backward recomputes a GELU (remat) next to
// that GELU's gradient. Exact GELU only; not differentiable.
const Op<GeluAttrs>& op_gelu_with_backward();
const Op<NoAttrs>& op_silu();
const Op<NoAttrs>& op_mish();
const Op<SoftplusAttrs>& op_softplus();
const Op<HardtanhAttrs>& op_hardtanh();
const Op<NoAttrs>& op_hardsigmoid();
const Op<NoAttrs>& op_hardswish();

}  // namespace ath
