// CPU kernels for the activation functions. Every formula is a select or min/max chain so the
// contiguous loop vectorizes; 16-bit floats compute in float.
// Memory contract: read in[0] once per element, write out[0] (same dtype) once; may alias.
#include "athanor/ops/activations.h"

#include <numbers>

#include "common/isa_dispatch.h"
#include "common/unary_kernel.h"
#include "gelu_math.h"

namespace ath::kernels {
namespace {

// Dense float32 GELU loops, compiled per ISA (isa_dispatch.h).
ATH_ISA_BODY void gelu_f32_body(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * normal_cdf_fast(x[i]);
}
ATH_ISA_DISPATCH(gelu_f32, (const float* x, float* y, int64_t n), (x, y, n))

ATH_ISA_BODY void gelu_backward_f32_body(const float* g, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = g[i] * (normal_cdf_fast(x[i]) + x[i] * normal_pdf(x[i]));
}
ATH_ISA_DISPATCH(gelu_backward_f32, (const float* g, const float* x, float* y, int64_t n),
                 (g, x, y, n))

// Both at once: Phi(x) once, each output's expression as in the two bodies above (so each has
// their bits: the same operations, contracted alike). The outputs may be written over the inputs
// (dx over g, y over x: InplacePolicy::EachOverItsInput), so a block of 256 elements is computed
// into local buffers the compiler knows alias nothing, then copied out: the loop vectorizes
// without run-time overlap checks (with exactly overlapping pointers those fall back to scalar
// code).
ATH_ISA_BODY void gelu_pair_f32_block(const float* __restrict g, const float* __restrict x,
                                      float* __restrict y, float* __restrict dx, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float cdf = normal_cdf_fast(x[i]);
    y[i] = x[i] * cdf;
    dx[i] = g[i] * (cdf + x[i] * normal_pdf(x[i]));
  }
}
ATH_ISA_BODY void gelu_pair_f32_body(const float* g, const float* x, float* y, float* dx,
                                     int64_t n) {
  constexpr int64_t kBlock = 256;
  alignas(64) float yb[kBlock], db[kBlock];
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t m = std::min(kBlock, n - b);
    gelu_pair_f32_block(g + b, x + b, yb, db, m);
    for (int64_t i = 0; i < m; ++i) y[b + i] = yb[i];
    for (int64_t i = 0; i < m; ++i) dx[b + i] = db[i];
  }
}
ATH_ISA_DISPATCH(gelu_pair_f32, (const float* g, const float* x, float* y, float* dx, int64_t n),
                 (g, x, y, dx, n))

// Runs fn(begin, end) over a float32 op whose operands are all dense and of out's size (the
// common case); false otherwise, for the general loop.
template <class T, class Fn>
bool run_dense_f32(Tensor& out, std::initializer_list<const Tensor*> ins, const Fn& fn) {
  if constexpr (!std::is_same_v<T, float>) {
    return false;
  } else {
    if (!out.is_contiguous()) return false;
    for (const Tensor* t : ins) {
      if (!t->is_contiguous() || t->numel() != out.numel()) return false;
    }
    parallel_for(0, out.numel(), kPointwiseGrain, fn);
    return true;
  }
}

// gelu_backward(g, x) = g * (Phi(x) + x * phi(x)).
// Memory contract: reads g and x once per element, writes out[0] once.
template <class T>
void gelu_backward_kernel(TensorSpan in, std::span<Tensor> out, const GeluAttrs&) {
  using C = compute_t<T>;
  const T *g = static_cast<const T*>(in[0].data_ptr()),
          *x = static_cast<const T*>(in[1].data_ptr());
  T* y = static_cast<T*>(out[0].data_ptr());
  if (run_dense_f32<T>(out[0], {&in[0], &in[1]}, [&](int64_t b, int64_t e) {
        if constexpr (std::is_same_v<T, float>) gelu_backward_f32(g + b, x + b, y + b, e - b);
      })) {
    return;
  }
  pointwise_loop<T, T, T>(
      out[0], {&in[0], &in[1]}, [](C gv, C xv) __attribute__((always_inline)) {
        return gv * (normal_cdf<C>(xv) + xv * normal_pdf<C>(xv));
      });
}

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
    const T* x = static_cast<const T*>(in[0].data_ptr());
    T* y = static_cast<T*>(out[0].data_ptr());
    if (run_dense_f32<T>(out[0], {&in[0]}, [&](int64_t b, int64_t e) {
          if constexpr (std::is_same_v<T, float>) gelu_f32(x + b, y + b, e - b);
        })) {
      return;
    }
    // Forced inline (also in gelu_backward): GCC otherwise keeps the lambda out of line, and a
    // call per element cannot vectorize.
    pointwise_loop<T, T>(
        out[0], {&in[0]}, [](C v) __attribute__((always_inline)) { return v * normal_cdf<C>(v); });
  } else {
    const C k = static_cast<C>(std::numbers::sqrt2 * std::numbers::inv_sqrtpi);
    const C c = static_cast<C>(0.044715);
    pointwise_loop<T, T>(out[0], {&in[0]}, [k, c](C x) {
      return C(0.5) * x * (C(1) + std::tanh(k * (x + c * x * x * x)));
    });
  }
}

// gelu_with_backward: (g, x) -> (gelu_backward(g, x), gelu(x)).
// Memory contract: dense float32 reads g and x once per element and writes each output once;
// the gradient may be g's buffer and the GELU x's (a block is read whole before its outputs are
// written). Anything else runs the two ops' kernels, the gradient first (it reads x, which the
// GELU may then overwrite; the gradient may overwrite g, which the GELU does not read).
template <class T>
void gelu_with_backward_kernel(TensorSpan in, std::span<Tensor> out, const GeluAttrs& a) {
  const T *g = static_cast<const T*>(in[0].data_ptr()),
          *x = static_cast<const T*>(in[1].data_ptr());
  T *dx = static_cast<T*>(out[0].data_ptr()), *y = static_cast<T*>(out[1].data_ptr());
  if (out[1].is_contiguous() &&
      run_dense_f32<T>(out[0], {&in[0], &in[1]}, [&](int64_t b, int64_t e) {
        if constexpr (std::is_same_v<T, float>) gelu_pair_f32(g + b, x + b, y + b, dx + b, e - b);
      })) {
    return;
  }
  gelu_backward_kernel<T>(in, out.subspan(0, 1), a);
  gelu_kernel<T>(in.subspan(1, 1), out.subspan(1, 1), a);
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
  register_cpu_floating(op_gelu_backward(), []<class T>() { return &gelu_backward_kernel<T>; });
  register_cpu_floating(op_gelu_with_backward(),
                        []<class T>() { return &gelu_with_backward_kernel<T>; });
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
