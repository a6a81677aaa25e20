#include "athanor/ops/fill.h"

#include "common/pointwise_loop.h"
#include "common/register.h"

namespace ath::kernels {
namespace {

// Writes the value into every element of out[0] (which may be input 0 itself).
template <class T>
void fill_kernel(TensorSpan, std::span<Tensor> out, const FillAttrs& a) {
  const compute_t<T> v = static_cast<compute_t<T>>(a.value.to<T>());
  pointwise_loop<T>(out[0], {}, [v]() { return v; });
}

const bool registered = [] {
  register_cpu_all(op_fill(), []<class T>() { return &fill_kernel<T>; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels
