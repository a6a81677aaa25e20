// view_scatter: zeros(base_shape), then grad added at the positions of a strided view.
// Memory contract: writes every element of out (zero fill), then reads each grad element once and
// adds it at its view position (positions may repeat for overlapping views: they accumulate).
#include "athanor/ops/views.h"

#include <cstring>

#include "common/pointwise_loop.h"
#include "common/register.h"

namespace ath::kernels {
namespace {

template <class T>
void view_scatter_kernel(TensorSpan in, std::span<Tensor> out, const ViewScatterAttrs& a) {
  Tensor& o = out[0];
  std::memset(o.data_ptr(), 0, o.nbytes());
  const int64_t capacity = o.numel();
  int64_t max_index = a.offset;
  for (std::size_t i = 0; i < a.size.size(); ++i) {
    if (a.size[i] == 0) return;
    max_index += (a.size[i] - 1) * a.stride[i];
  }
  ATH_CHECK(a.offset >= 0 && max_index < capacity, IndexError,
            "view_scatter: view reaches element {} of {}", max_index, capacity);
  Tensor target = make_view(o, a.size, a.stride, a.offset);
  // Overlapping positions must accumulate, so run serially (grain = everything).
  pointwise_loop<T, T, T>(
      target, {&target, &in[0]}, [](compute_t<T> x, compute_t<T> g) { return compute_t<T>(x + g); },
      /*grain=*/std::numeric_limits<int64_t>::max());
}

const bool registered = [] {
  register_cpu_floating(op_view_scatter(), []<class T>() { return &view_scatter_kernel<T>; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels
