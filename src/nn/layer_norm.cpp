#include "athanor/core/error.h"
#include "athanor/nn/normalization.h"
#include "athanor/ops/ops.h"

namespace ath::nn {

LayerNorm::LayerNorm(LayerNormOptions o) : Module("LayerNorm"), options(std::move(o)) {
  ATH_CHECK(!options.shape.empty(), ValueError, "LayerNorm: shape (normalized_shape) is empty");
  if (options.elementwise_affine) {
    weight = register_parameter("weight", ones(options.shape, options.dtype));
    bias = register_parameter("bias", zeros(options.shape, options.dtype));
  }
}

Tensor LayerNorm::forward(const Tensor& x) {
  return layer_norm(x, options.shape, weight, bias, options.eps);
}

std::string LayerNorm::extra_repr() const {
  return fmt::format("({},), eps={}, elementwise_affine={}", fmt::join(options.shape, ", "),
                     options.eps, options.elementwise_affine ? "True" : "False");
}

}  // namespace ath::nn
