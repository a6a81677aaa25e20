// one_hot: zero-fills the output, then writes a 1 per input element (after its range check).
#include <cstring>

#include "athanor/ops/indexing.h"
#include "common/index_util.h"
#include "common/register.h"

namespace ath::kernels {
namespace {

void one_hot_kernel(TensorSpan in, std::span<Tensor> out, const OneHotAttrs& a) {
  Tensor& o = out[0];
  std::memset(o.data_ptr(), 0, o.nbytes());
  const Tensor& x = in[0];
  if (x.numel() == 0) return;
  Geometry g = geometry(x);
  const int64_t* xp = static_cast<const int64_t*>(x.data_ptr());
  int64_t* op = static_cast<int64_t*>(o.data_ptr());
  for_each_index(g.shape, 0, x.numel(), [&](int64_t k, const Index& i) {
    int64_t c = xp[offset_of(i, g.strides)];
    ATH_CHECK(c >= 0 && c < a.num_classes, IndexError,
              "class value {} is out of range for num_classes {}", c, a.num_classes);
    op[k * a.num_classes + c] = 1;
  });
}

const bool registered = [] {
  register_cpu<int64_t>(op_one_hot(), []<class T>() { return &one_hot_kernel; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels
