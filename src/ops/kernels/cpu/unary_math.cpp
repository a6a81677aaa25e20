// CPU kernels for the unary math ops (exp ... erf), abs, sign and rounding.
// Memory contract: see unary_kernel.h (read in[0], write out[0] once per element; may alias).
// Integer inputs of the floating-result ops arrive already converted to float32.
#include "athanor/ops/pointwise.h"
#include "common/unary_kernel.h"

namespace ath::kernels {
namespace {

template <class T>
void abs_kernel(TensorSpan in, std::span<Tensor> out, const NoAttrs&) {
  using C = compute_t<T>;
  pointwise_loop<T, T>(out[0], {&in[0]}, [](C x) -> C {
    if constexpr (kIsFloat<T>) {
      return std::abs(x);
    } else if constexpr (std::is_unsigned_v<C>) {
      return x;
    } else {  // negate through unsigned: abs(INT64_MIN) wraps to itself (as torch), no UB
      using U = std::make_unsigned_t<C>;
      return x < 0 ? static_cast<C>(U(0) - static_cast<U>(x)) : x;
    }
  });
}

template <class T>
void sign_kernel(TensorSpan in, std::span<Tensor> out, const NoAttrs&) {
  using C = compute_t<T>;
  // (0 < x) - (x < 0): NaN gives 0, as torch.sign does.
  pointwise_loop<T, T>(out[0], {&in[0]}, [](C x) -> C {
    if constexpr (std::is_same_v<C, bool>)
      return x;
    else
      return static_cast<C>(static_cast<int>(C(0) < x) - static_cast<int>(x < C(0)));
  });
}

// floor, ceil, trunc: the identity on integers.
template <class T, class F>
void rounding_kernel(TensorSpan in, std::span<Tensor> out, F f) {
  using C = compute_t<T>;
  if constexpr (kIsFloat<T>)
    pointwise_loop<T, T>(out[0], {&in[0]}, [f](C x) { return static_cast<C>(f(x)); });
  else
    pointwise_loop<T, T>(out[0], {&in[0]}, [](C x) { return x; });
}
template <class T>
void floor_kernel(TensorSpan in, std::span<Tensor> out, const NoAttrs&) {
  rounding_kernel<T>(in, out, [](auto x) { return std::floor(x); });
}
template <class T>
void ceil_kernel(TensorSpan in, std::span<Tensor> out, const NoAttrs&) {
  rounding_kernel<T>(in, out, [](auto x) { return std::ceil(x); });
}
template <class T>
void trunc_kernel(TensorSpan in, std::span<Tensor> out, const NoAttrs&) {
  rounding_kernel<T>(in, out, [](auto x) { return std::trunc(x); });
}

// Half to even (nearbyint in the default rounding mode). With decimals, as torch: scale by
// 10^|decimals|, round, scale back (dividing first for negative decimals).
template <class T>
void round_kernel(TensorSpan in, std::span<Tensor> out, const RoundAttrs& a) {
  using C = compute_t<T>;
  if constexpr (kIsFloat<T>) {
    if (a.decimals == 0) {
      pointwise_loop<T, T>(out[0], {&in[0]}, [](C x) { return std::nearbyint(x); });
      return;
    }
    const C ten_pow = static_cast<C>(std::pow(10.0, static_cast<double>(std::abs(a.decimals))));
    if (a.decimals > 0) {
      pointwise_loop<T, T>(out[0], {&in[0]},
                           [ten_pow](C x) { return std::nearbyint(x * ten_pow) / ten_pow; });
    } else {
      pointwise_loop<T, T>(out[0], {&in[0]},
                           [ten_pow](C x) { return std::nearbyint(x / ten_pow) * ten_pow; });
    }
  } else {
    pointwise_loop<T, T>(out[0], {&in[0]}, [](C x) { return x; });
  }
}

const bool registered = [] {
  register_unary_floating(op_exp(), [](auto x) { return std::exp(x); });
  register_unary_floating(op_exp2(), [](auto x) { return std::exp2(x); });
  register_unary_floating(op_log(), [](auto x) { return std::log(x); });
  register_unary_floating(op_log2(), [](auto x) { return std::log2(x); });
  register_unary_floating(op_log1p(), [](auto x) { return std::log1p(x); });
  register_unary_floating(op_expm1(), [](auto x) { return std::expm1(x); });
  register_unary_floating(op_sqrt(), [](auto x) { return std::sqrt(x); });
  register_unary_floating(op_rsqrt(), [](auto x) { return decltype(x)(1) / std::sqrt(x); });
  register_unary_floating(op_reciprocal(), [](auto x) { return decltype(x)(1) / x; });
  register_unary_floating(op_sin(), [](auto x) { return std::sin(x); });
  register_unary_floating(op_cos(), [](auto x) { return std::cos(x); });
  register_unary_floating(op_tan(), [](auto x) { return std::tan(x); });
  register_unary_floating(op_asin(), [](auto x) { return std::asin(x); });
  register_unary_floating(op_acos(), [](auto x) { return std::acos(x); });
  register_unary_floating(op_atan(), [](auto x) { return std::atan(x); });
  register_unary_floating(op_tanh(), [](auto x) { return std::tanh(x); });
  register_unary_floating(op_sigmoid(), [](auto x) {
    using C = decltype(x);
    return C(1) / (C(1) + std::exp(-x));
  });
  register_unary_floating(op_erf(), [](auto x) { return std::erf(x); });

  register_cpu_numeric(op_abs(), []<class T>() { return &abs_kernel<T>; });
  register_cpu_all(op_sign(), []<class T>() { return &sign_kernel<T>; });
  register_cpu_numeric(op_floor(), []<class T>() { return &floor_kernel<T>; });
  register_cpu_numeric(op_ceil(), []<class T>() { return &ceil_kernel<T>; });
  register_cpu_numeric(op_trunc(), []<class T>() { return &trunc_kernel<T>; });
  register_cpu_numeric(op_round(), []<class T>() { return &round_kernel<T>; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels
