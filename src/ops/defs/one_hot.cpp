// one_hot: int64 class indices -> int64 one-hot rows. num_classes = -1 is resolved by the public
// function (max + 1) so the op's output shape depends on its attributes only.
#include <algorithm>

#include "athanor/ops/dispatch.h"
#include "athanor/ops/indexing.h"

namespace ath {

const Op<OneHotAttrs>& op_one_hot() {
  static const auto& op = define_op<OneHotAttrs>({
      .name = "one_hot",
      .kind = OpKind::Opaque,
      .infer =
          [](TensorSpan in, const OneHotAttrs& a) {
            ATH_CHECK(in[0].dtype() == kInt64, DTypeError,
                      "expected an int64 tensor of class indices, got {}",
                      dtype_name(in[0].dtype()));
            ATH_CHECK(a.num_classes >= 0, ValueError, "num_classes must be >= 0, got {}",
                      a.num_classes);
            Shape s = in[0].shape();
            s.push_back(a.num_classes);
            return OutputSpec{{{s, kInt64}}, kInt64};
          },
      .not_differentiable = "maps integer classes to integer rows",
  });
  return op;
}

Tensor one_hot(const Tensor& x, int64_t num_classes) {
  if (num_classes == -1) {
    num_classes = with_op_context(op_one_hot(), [&] {
      ATH_CHECK(x.defined() && x.dtype() == kInt64, DTypeError,
                "expected an int64 tensor of class indices");
      ATH_CHECK(x.numel() > 0, ValueError,
                "can't infer the number of classes from an empty tensor; pass num_classes");
      std::vector<int64_t> v = x.to_vector<int64_t>();
      return *std::max_element(v.begin(), v.end()) + 1;
    });
  }
  return call1(op_one_hot(), {x}, OneHotAttrs{.num_classes = num_classes});
}

}  // namespace ath
