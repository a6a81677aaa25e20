// CPU kernels for the activation functions. Every formula is a select or min/max chain so the
// contiguous loop vectorizes; 16-bit floats compute in float.
// Memory contract: read in[0] once per element, write out[0] (same dtype) once; may alias.
#include "athanor/ops/activations.h"

#include <numbers>

#include "unary_kernel.h"

namespace ath::kernels {
namespace {

template <class T>
void relu_kernel(TensorSpan in, std::span<Tensor> out, const NoAttrs&) {
  using C = compute_t<T>;
  // std::max(x, 0) returns x when x is NaN (the comparison is false): NaN propagates like torch.
  pointwise_loop<T, T>(out[0], {&in[0]}, [](C x) { return std::max(x, C(0)); });
}

template <class T>
void leaky_relu_kernel(TensorSpan in, std::span<Tensor> out, const LeakyReluAttrs& a) {
  using C = compute_t<T>;
  const C s = static_cast<C>(a.negative_slope);
  pointwise_loop<T, T>(out[0], {&in[0]}, [s](C x) { return x > C(0) ? x : x * s; });
}

template <class T>
void elu_kernel(TensorSpan in, std::span<Tensor> out, const EluAttrs& a) {
  using C = compute_t<T>;
  const C pos = static_cast<C>(a.scale), neg = static_cast<C>(a.scale * a.alpha);
  pointwise_loop<T, T>(out[0], {&in[0]},
                       [pos, neg](C x) { return x > C(0) ? pos * x : neg * std::expm1(x); });
}

template <class T>
void gelu_kernel(TensorSpan in, std::span<Tensor> out, const GeluAttrs& a) {
  using C = compute_t<T>;
  if (a.approximate == GeluApprox::None) {
    const C r = static_cast<C>(std::numbers::sqrt2 / 2);
    pointwise_loop<T, T>(out[0], {&in[0]},
                         [r](C x) { return C(0.5) * x * (C(1) + std::erf(x * r)); });
  } else {
    const C k = static_cast<C>(std::numbers::sqrt2 * std::numbers::inv_sqrtpi);
    const C c = static_cast<C>(0.044715);
    pointwise_loop<T, T>(out[0], {&in[0]}, [k, c](C x) {
      return C(0.5) * x * (C(1) + std::tanh(k * (x + c * x * x * x)));
    });
  }
}

template <class T>
void softplus_kernel(TensorSpan in, std::span<Tensor> out, const SoftplusAttrs& a) {
  using C = compute_t<T>;
  const C beta = static_cast<C>(a.beta), threshold = static_cast<C>(a.threshold);
  pointwise_loop<T, T>(out[0], {&in[0]}, [beta, threshold](C x) {
    return x * beta > threshold ? x : std::log1p(std::exp(x * beta)) / beta;
  });
}

template <class T>
void hardtanh_kernel(TensorSpan in, std::span<Tensor> out, const HardtanhAttrs& a) {
  using C = compute_t<T>;
  const C lo = scalar_as<C>(a.min_val), hi = scalar_as<C>(a.max_val);
  pointwise_loop<T, T>(out[0], {&in[0]}, [lo, hi](C x) { return std::min(std::max(x, lo), hi); });
}

const bool registered = [] {
  register_cpu_numeric(op_relu(), []<class T>() { return &relu_kernel<T>; });
  register_cpu_floating(op_leaky_relu(), []<class T>() { return &leaky_relu_kernel<T>; });
  register_cpu_floating(op_elu(), []<class T>() { return &elu_kernel<T>; });
  register_cpu_floating(op_gelu(), []<class T>() { return &gelu_kernel<T>; });
  register_cpu_floating(op_softplus(), []<class T>() { return &softplus_kernel<T>; });
  register_cpu_numeric(op_hardtanh(), []<class T>() { return &hardtanh_kernel<T>; });
  register_unary_floating(op_silu(), [](auto x) {
    using C = decltype(x);
    return x / (C(1) + std::exp(-x));
  });
  register_unary_floating(op_mish(), [](auto x) { return x * std::tanh(std::log1p(std::exp(x))); });
  register_unary_floating(op_hardsigmoid(), [](auto x) {
    using C = decltype(x);
    return std::min(std::max(x + C(3), C(0)), C(6)) / C(6);
  });
  register_unary_floating(op_hardswish(), [](auto x) {
    using C = decltype(x);
    return x * std::min(std::max(x + C(3), C(0)), C(6)) / C(6);
  });
  return true;
}();

}  // namespace
}  // namespace ath::kernels
