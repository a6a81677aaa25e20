// CPU kernels for pow, maximum/minimum, fmod/remainder, lerp and clamp.
// Memory contract: inputs arrive in the kernel dtype (broadcast, any strides) and are read once
// per output element; out[0] is written once per element and may alias in[0] (in-place forms),
// except fmod/remainder, whose in-place form goes through a temporary (they can throw midway).
#include <atomic>

#include "athanor/ops/pointwise.h"
#include "common/unary_kernel.h"

namespace ath::kernels {
namespace {

// Integer power by squaring; negative exponents give 1, +-1 or 0 as torch's powi does. The
// exponent is int64 so a scalar exponent is not truncated to a narrow tensor type first.
template <class C>
C powi(C base, int64_t exp) {
  if (exp < 0) {
    if (base == C(1)) return C(1);
    if constexpr (std::is_signed_v<C>) {
      if (base == C(-1)) return (exp % 2) != 0 ? C(-1) : C(1);
    }
    return C(0);
  }
  using U = std::make_unsigned_t<C>;  // wrap on overflow without UB, as torch's ints do
  U result = 1, b = static_cast<U>(base);
  for (auto e = static_cast<uint64_t>(exp); e != 0; e >>= 1) {
    if (e & 1u) result = static_cast<U>(result * b);
    b = static_cast<U>(b * b);
  }
  return static_cast<C>(result);
}

template <class T>
void pow_kernel(TensorSpan in, std::span<Tensor> out, const NoAttrs&) {
  using C = compute_t<T>;
  pointwise_loop<T, T, T>(out[0], {&in[0], &in[1]}, [](C x, C y) -> C {
    if constexpr (kIsFloat<T>)
      return std::pow(x, y);
    else
      return powi(x, static_cast<int64_t>(y));
  });
}

template <class T>
void pow_scalar_kernel(TensorSpan in, std::span<Tensor> out, const PowScalarAttrs& a) {
  using C = compute_t<T>;
  Tensor& o = out[0];
  const Tensor* x = &in[0];
  if constexpr (kIsFloat<T>) {
    const double e = a.exponent.to_double();
    // The common exponents skip the pow call (and vectorize).
    if (e == 2) return pointwise_loop<T, T>(o, {x}, [](C v) { return v * v; });
    if (e == 3) return pointwise_loop<T, T>(o, {x}, [](C v) { return v * v * v; });
    if (e == 1) return pointwise_loop<T, T>(o, {x}, [](C v) { return v; });
    if (e == 0.5) return pointwise_loop<T, T>(o, {x}, [](C v) { return std::sqrt(v); });
    if (e == -1) return pointwise_loop<T, T>(o, {x}, [](C v) { return C(1) / v; });
    const C ec = static_cast<C>(e);
    pointwise_loop<T, T>(o, {x}, [ec](C v) { return std::pow(v, ec); });
  } else {
    const int64_t e = a.exponent.to_int();  // >= 0: the shape rule refuses negative ones
    pointwise_loop<T, T>(o, {x}, [e](C v) { return powi(v, e); });
  }
}

// NaN-propagating: the float select keeps x when x wins or is NaN, else y (NaN when y is).
template <class T, bool Max>
void max_min_kernel(TensorSpan in, std::span<Tensor> out, const NoAttrs&) {
  using C = compute_t<T>;
  pointwise_loop<T, T, T>(out[0], {&in[0], &in[1]}, [](C x, C y) -> C {
    if constexpr (kIsFloat<T>)
      return ((Max ? x > y : x < y) || x != x) ? x : y;
    else
      return Max ? std::max(x, y) : std::min(x, y);
  });
}

// Integer fmod/remainder: a zero divisor is recorded and reported after the loop (a kernel
// cannot throw from inside the parallel region); b == -1 is special-cased because
// INT_MIN % -1 traps on x86.
template <class T, bool PythonSign>
void mod_kernel(TensorSpan in, std::span<Tensor> out, const NoAttrs&) {
  using C = compute_t<T>;
  if constexpr (kIsFloat<T>) {
    pointwise_loop<T, T, T>(out[0], {&in[0], &in[1]}, [](C x, C y) -> C {
      C m = std::fmod(x, y);
      if constexpr (PythonSign) return (m != C(0) && ((y < C(0)) != (m < C(0)))) ? m + y : m;
      return m;
    });
  } else {
    std::atomic<bool> zero{false};
    pointwise_loop<T, T, T>(out[0], {&in[0], &in[1]}, [&zero](C x, C y) -> C {
      if (y == C(0)) {
        zero.store(true, std::memory_order_relaxed);
        return C(0);
      }
      if constexpr (std::is_signed_v<C>) {
        if (y == C(-1)) return C(0);
      }
      C m = static_cast<C>(x % y);
      if constexpr (PythonSign && std::is_signed_v<C>) {
        if (m != 0 && ((m < 0) != (y < 0))) m = static_cast<C>(m + y);
      }
      return m;
    });
    ATH_CHECK(!zero.load(), ValueError, "ZeroDivisionError: integer division by zero");
  }
}

// torch's two-sided form: exact at both ends (weight 0 gives start, 1 gives end).
template <class C>
C lerp_value(C a, C b, C w) {
  return std::abs(w) < C(0.5) ? a + w * (b - a) : b - (b - a) * (C(1) - w);
}

template <class T>
void lerp_scalar_kernel(TensorSpan in, std::span<Tensor> out, const LerpAttrs& a) {
  using C = compute_t<T>;
  const C w = static_cast<C>(a.weight.to_double());
  pointwise_loop<T, T, T>(out[0], {&in[0], &in[1]}, [w](C x, C y) { return lerp_value(x, y, w); });
}

template <class T>
void lerp_kernel(TensorSpan in, std::span<Tensor> out, const NoAttrs&) {
  using C = compute_t<T>;
  pointwise_loop<T, T, T, T>(out[0], {&in[0], &in[1], &in[2]},
                             [](C x, C y, C w) { return lerp_value(x, y, w); });
}

template <class T>
void clamp_kernel(TensorSpan in, std::span<Tensor> out, const ClampAttrs& a) {
  using C = compute_t<T>;
  using Lim = std::numeric_limits<C>;  // an absent bound: infinity, so x = -inf stays -inf
  const C lo = a.min ? scalar_as<C>(*a.min) : kIsFloat<T> ? -Lim::infinity() : Lim::lowest();
  const C hi = a.max ? scalar_as<C>(*a.max) : kIsFloat<T> ? Lim::infinity() : Lim::max();
  // std::max(x, lo) keeps x when x is NaN; a NaN bound is ignored (both as torch 1.13).
  pointwise_loop<T, T>(out[0], {&in[0]}, [lo, hi](C x) { return std::min(std::max(x, lo), hi); });
}

const bool registered = [] {
  register_cpu_numeric(op_pow(), []<class T>() { return &pow_kernel<T>; });
  register_cpu_numeric(op_pow_tensor_scalar(), []<class T>() { return &pow_scalar_kernel<T>; });
  register_cpu_all(op_maximum(), []<class T>() { return &max_min_kernel<T, true>; });
  register_cpu_all(op_minimum(), []<class T>() { return &max_min_kernel<T, false>; });
  register_cpu_numeric(op_fmod(), []<class T>() { return &mod_kernel<T, false>; });
  register_cpu_numeric(op_remainder(), []<class T>() { return &mod_kernel<T, true>; });
  register_cpu_floating(op_lerp_scalar(), []<class T>() { return &lerp_scalar_kernel<T>; });
  register_cpu_floating(op_lerp(), []<class T>() { return &lerp_kernel<T>; });
  register_cpu_numeric(op_clamp(), []<class T>() { return &clamp_kernel<T>; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels
