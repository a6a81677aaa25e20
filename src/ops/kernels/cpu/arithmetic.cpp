// CPU kernels for add, mul, div, neg. Inputs arrive converted to the kernel dtype.
#include "athanor/ops/pointwise.h"
#include "common/pointwise_loop.h"
#include "common/register.h"

namespace ath::kernels {
namespace {

template <class T>
void add_kernel(TensorSpan in, std::span<Tensor> out, const AlphaAttrs& a) {
  using C = compute_t<T>;
  if (a.alpha.to_double() == 1.0) {
    pointwise_loop<T, T, T>(out[0], {&in[0], &in[1]}, [](C x, C y) { return C(x + y); });
  } else {
    const C alpha = static_cast<C>(a.alpha.to<T>());
    pointwise_loop<T, T, T>(out[0], {&in[0], &in[1]},
                            [alpha](C x, C y) { return C(x + alpha * y); });
  }
}

template <class T>
void mul_kernel(TensorSpan in, std::span<Tensor> out, const NoAttrs&) {
  using C = compute_t<T>;
  pointwise_loop<T, T, T>(out[0], {&in[0], &in[1]}, [](C x, C y) { return C(x * y); });
}

template <class T>
void div_kernel(TensorSpan in, std::span<Tensor> out, const NoAttrs&) {
  using C = compute_t<T>;
  pointwise_loop<T, T, T>(out[0], {&in[0], &in[1]}, [](C x, C y) { return C(x / y); });
}

template <class T>
void neg_kernel(TensorSpan in, std::span<Tensor> out, const NoAttrs&) {
  using C = compute_t<T>;
  pointwise_loop<T, T>(out[0], {&in[0]}, [](C x) -> C {
    if constexpr (std::is_integral_v<C>) {  // through unsigned: -INT_MIN wraps (as torch), no UB
      using U = std::make_unsigned_t<C>;
      return static_cast<C>(U(0) - static_cast<U>(x));
    } else {
      return -x;
    }
  });
}

const bool registered = [] {
  register_cpu_numeric(op_add(), []<class T>() { return &add_kernel<T>; });
  register_cpu<bool>(op_add(), []<class T>() { return &add_kernel<T>; });
  register_cpu_numeric(op_mul(), []<class T>() { return &mul_kernel<T>; });
  register_cpu<bool>(op_mul(), []<class T>() { return &mul_kernel<T>; });
  register_cpu_floating(op_div(), []<class T>() { return &div_kernel<T>; });
  register_cpu_numeric(op_neg(), []<class T>() { return &neg_kernel<T>; });  // uint8 wraps
  return true;
}();

}  // namespace
}  // namespace ath::kernels
