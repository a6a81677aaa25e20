// One kernel template for every unary pointwise op whose math is a stateless functor:
//
//   register_unary_floating(op_exp(), [](auto x) { return std::exp(x); });
//
// The functor gets and returns the compute type (float for the 16-bit floats, the storage type
// otherwise); keep it branch-free (selects, std::min/max) so the contiguous loop vectorizes.
// Memory contract: reads in[0] once per element, writes out[0] (same dtype, contiguous); out may
// be in[0] itself (the in-place forms).
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>

#include "pointwise_loop.h"
#include "register.h"

namespace ath::kernels {

template <class F, class T, class A>
void unary_kernel(TensorSpan in, std::span<Tensor> out, const A&) {
  using C = compute_t<T>;
  pointwise_loop<T, T>(out[0], {&in[0]}, [](C x) { return static_cast<C>(F{}(x)); });
}

template <class... Ts, class A, class F>
void register_unary(const Op<A>& op, F) {
  register_cpu<Ts...>(op, []<class T>() { return &unary_kernel<F, T, A>; });
}

template <class A, class F>
void register_unary_floating(const Op<A>& op, F f) {
  register_unary<float, double, BFloat16, Half>(op, f);
}

template <class T>
inline constexpr bool kIsFloat = !std::is_integral_v<compute_t<T>>;

// A scalar attribute in the compute type: floating types take the double exactly (rounded to
// float once), integers truncate like torch's toLong().
template <class C>
C scalar_as(const Scalar& s) {
  if constexpr (std::is_floating_point_v<C>)
    return static_cast<C>(s.to_double());
  else
    return s.to<C>();
}

}  // namespace ath::kernels
