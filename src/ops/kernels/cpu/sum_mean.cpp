// CPU kernels for sum and mean. Floats accumulate in float (16-lane strips keep the error
// near pairwise summation's), doubles in double, integers in int64.
#include "athanor/ops/reduction.h"
#include "common/reduce_loop.h"
#include "common/register.h"

namespace ath::kernels {

namespace {

template <class T>
using acc_t = std::conditional_t<std::is_floating_point_v<compute_t<T>>, compute_t<T>, int64_t>;

template <class T>
void sum_kernel(TensorSpan in, std::span<Tensor> out, const ReduceAttrs& a) {
  dispatch_dtype(out[0].dtype(), [&]<class O>() {
    if constexpr (std::is_same_v<O, bool>) {
      ATH_THROW(DTypeError, "sum to bool is not supported");
    } else {
      using Acc = std::conditional_t<std::is_floating_point_v<compute_t<O>>, double, int64_t>;
      using A = std::conditional_t<std::is_same_v<compute_t<T>, double> ||
                                       !std::is_floating_point_v<compute_t<O>>,
                                   Acc, float>;
      reduce_loop<T, A, O>(
          in[0], a.dims, out[0], A(0), [](A x, A y) { return x + y; },
          [](A v) { return static_cast<compute_t<O>>(v); });
    }
  });
}

template <class T>
void mean_kernel(TensorSpan in, std::span<Tensor> out, const ReduceAttrs& a) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const int64_t count = std::max<int64_t>(reduced_count(in[0].shape(), a.dims), 1);
  dispatch_dtype(out[0].dtype(), [&]<class O>() {
    if constexpr (std::is_floating_point_v<compute_t<O>>) {
      reduce_loop<T, A, O>(
          in[0], a.dims, out[0], A(0), [](A x, A y) { return x + y; },
          [count](A v) { return static_cast<compute_t<O>>(v / static_cast<A>(count)); });
    } else {
      ATH_THROW(DTypeError, "mean needs a floating output dtype");
    }
  });
}

const bool registered = [] {
  register_cpu_all(op_sum(), []<class T>() { return &sum_kernel<T>; });
  register_cpu_floating(op_mean(), []<class T>() { return &mean_kernel<T>; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels
