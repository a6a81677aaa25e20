// CPU kernels for sum and mean. Floats accumulate in float (16-lane strips keep the error
// near pairwise summation's), doubles in double, integers in int64.
#include "athanor/ops/reduction.h"
#include "common/isa_dispatch.h"
#include "common/reduce_loop.h"
#include "common/register.h"

namespace ath::kernels {

namespace {

template <class T>
using acc_t = std::conditional_t<std::is_floating_point_v<compute_t<T>>, compute_t<T>, int64_t>;

// One block of a float32 sum over leading dims ([outer, n, inner] -> [outer, inner]: the bias
// gradient), compiled per ISA: the library's baseline build is SSE2, 4 lanes, which summed W4's
// [2048, 128..512] bias gradients at 16-25 GB/s. The same adds in the same order in every copy
// (each accumulator is one lane of a vector, whatever its width), so the bits do not change.
ATH_ISA_BODY void sum_outer_block_f32_body(const float* base, int64_t n, int64_t inner, int64_t w,
                                           float* lanes, float* dst) {
  reduce_outer_block<float, float, float>(
      base, n, inner, w, lanes, dst, 0.0f,
      [](float x, float y) __attribute__((always_inline)) { return x + y; },
      [](float v) __attribute__((always_inline)) { return v; }, CastTo<float>{});
}
ATH_ISA_DISPATCH(sum_outer_block_f32,
                 (const float* base, int64_t n, int64_t inner, int64_t w, float* lanes, float* dst),
                 (base, n, inner, w, lanes, dst))

template <class T>
void sum_kernel(TensorSpan in, std::span<Tensor> out, const ReduceAttrs& a) {
  if constexpr (std::is_same_v<T, float>) {
    int64_t outer = 0, n = 0, inner = 0;
    if (out[0].dtype() == kFloat32 && out[0].numel() > 0 &&
        outer_reduction_layout(in[0], a.dims, outer, n, inner)) {
      reduce_outer_blocks<float, float, float>(static_cast<const float*>(in[0].data_ptr()), outer,
                                               n, inner, static_cast<float*>(out[0].data_ptr()),
                                               &sum_outer_block_f32);
      return;
    }
  }
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
