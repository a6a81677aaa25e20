// CPU kernels for sum and mean. Floats accumulate in float (16-lane strips keep the error
// near pairwise summation's), doubles in double, integers in int64.
#include "athanor/ops/reduction.h"
#include "athanor/tensor/grad_mode.h"
#include "reduce_loop.h"
#include "register.h"

namespace ath::kernels {

Tensor reduction_view(const Tensor& x, const DimList& dims, int64_t& m, int64_t& n) {
  DimList kept, reduced;
  for (int64_t d = 0; d < x.dim(); ++d) {
    bool r = dims.empty() || std::find(dims.begin(), dims.end(), d) != dims.end();
    (r ? reduced : kept).push_back(d);
  }
  Shape sizes;
  Strides strides;
  m = 1;
  n = 1;
  for (int64_t d : kept) {
    sizes.push_back(x.shape()[d]);
    strides.push_back(x.strides()[d]);
    m *= x.shape()[d];
  }
  for (int64_t d : reduced) {
    sizes.push_back(x.shape()[d]);
    strides.push_back(x.strides()[d]);
    n *= x.shape()[d];
  }
  Tensor v = make_view(x, sizes, strides, x.storage_offset());
  if (v.is_contiguous()) return v;
  NoGradGuard no_grad;  // a kernel's scratch copy is not part of the graph
  return v.clone();
}

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
