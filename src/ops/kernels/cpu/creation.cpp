// arange, linspace, eye.
// Memory contract: no inputs; every output element is written once (eye zero-fills first).
// Element i is computed from i alone (never by accumulating steps), so rounding doesn't drift
// and the result doesn't depend on the thread count.
#include "athanor/ops/creation.h"

#include <cstring>

#include "athanor/core/parallel.h"
#include "common/register.h"

namespace ath::kernels {
namespace {

template <class T>
T from_double(double v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return T(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

// Element i = start + i * step in torch's accumulate type: int64 for integers (the bounds
// truncated first), float for the 16-bit floats, double for float and double.
template <class T>
void arange_kernel(TensorSpan, std::span<Tensor> out, const ArangeAttrs& a) {
  using Acc =
      std::conditional_t<std::is_integral_v<T>, int64_t,
                         std::conditional_t<std::is_same_v<compute_t<T>, T>, double, float>>;
  T* op = static_cast<T*>(out[0].data_ptr());
  const Acc start = a.start.to<Acc>(), step = a.step.to<Acc>();
  parallel_for(0, a.size, kPointwiseGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      op[i] = static_cast<T>(static_cast<compute_t<T>>(start + static_cast<Acc>(i) * step));
    }
  });
}

// torch's linspace: the step in the element type (double for integers), the first half counted
// from start and the second from end, so both endpoints are exact.
template <class T>
void linspace_kernel(TensorSpan, std::span<Tensor> out, const LinspaceAttrs& a) {
  using S = std::conditional_t<std::is_integral_v<T>, double, compute_t<T>>;
  T* op = static_cast<T*>(out[0].data_ptr());
  const int64_t n = a.steps;
  if (n == 0) return;
  const S start = static_cast<S>(static_cast<compute_t<T>>(from_double<T>(a.start)));
  const S end = static_cast<S>(static_cast<compute_t<T>>(from_double<T>(a.end)));
  if (n == 1) {
    op[0] = from_double<T>(static_cast<double>(start));
    return;
  }
  const S step = (end - start) / static_cast<S>(n - 1);
  const int64_t half = n / 2;
  parallel_for(0, n, kPointwiseGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      S v = i < half ? start + step * static_cast<S>(i) : end - step * static_cast<S>(n - i - 1);
      op[i] = static_cast<T>(v);
    }
  });
}

template <class T>
void eye_kernel(TensorSpan, std::span<Tensor> out, const EyeAttrs& a) {
  std::memset(out[0].data_ptr(), 0, out[0].nbytes());
  T* op = static_cast<T*>(out[0].data_ptr());
  for (int64_t i = 0; i < std::min(a.n, a.m); ++i) op[i * a.m + i] = from_double<T>(1.0);
}

const bool registered = [] {
  register_cpu_numeric(op_arange(), []<class T>() { return &arange_kernel<T>; });
  register_cpu_numeric(op_linspace(), []<class T>() { return &linspace_kernel<T>; });
  register_cpu_all(op_eye(), []<class T>() { return &eye_kernel<T>; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels
