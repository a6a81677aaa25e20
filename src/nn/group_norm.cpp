#include "athanor/nn/group_norm.h"

#include "athanor/core/error.h"
#include "athanor/ops/ops.h"
#include "repr.h"

namespace ath::nn {

GroupNorm::GroupNorm(GroupNormOptions o) : Module("GroupNorm"), options(o) {
  ATH_CHECK(o.groups >= 1 && o.channels >= 0, ValueError,
            "GroupNorm: groups must be positive and channels non-negative, got groups={} "
            "channels={}",
            o.groups, o.channels);
  ATH_CHECK(o.channels % o.groups == 0, ValueError,
            "GroupNorm: channels ({}) must be divisible by groups ({})", o.channels, o.groups);
  ATH_CHECK(o.eps >= 0, ValueError, "GroupNorm: eps must be non-negative, got {}", o.eps);
  if (o.affine) {
    weight = register_parameter("weight", ones({o.channels}, o.dtype));
    bias = register_parameter("bias", zeros({o.channels}, o.dtype));
  }
}

// Like PyTorch, the input's channel count is checked by the op (against the weight, and for
// divisibility by groups), not against options.channels.
Tensor GroupNorm::forward(const Tensor& x) {
  return group_norm(x, options.groups, weight, bias, options.eps);
}

std::string GroupNorm::extra_repr() const {
  return fmt::format("{}, {}, eps={}, affine={}", options.groups, options.channels,
                     detail::py_float(options.eps), detail::py_bool(options.affine));
}

}  // namespace ath::nn
