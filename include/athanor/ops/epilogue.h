// Matrix products and convolutions with a fused ReLU epilogue: relu(linear(x, w, b)) and
// relu(convolution(x, w, b)) in one kernel, the activation applied by oneDNN to each output block
// while it is still in registers or cache (an eltwise post-op), instead of a second pass over the
// output in memory. The compiler's "epilogue" pass puts them in place of a linear or convolution
// whose only reader is a relu (graph/passes.h); they are ordinary registry ops too.
//
//   #include "athanor/ops/epilogue.h"
//   Tensor x = randn({4, 8}), w = randn({3, 8}), b = randn({3});
//   assert(allclose(linear_relu(x, w, b), relu(linear(x, w, b))));
//
// Gradients: the ReLU's mask comes from the output (y > 0 exactly where the pre-activation was),
// so only the output is kept for the backward, not the pre-activation.
#pragma once

#include <optional>

#include "athanor/ops/conv.h"
#include "athanor/tensor/tensor.h"

namespace ath {

const Op<NoAttrs>& op_linear_relu();
const Op<ConvAttrs>& op_convolution_relu();  // not transposed

Tensor linear_relu(const Tensor& x, const Tensor& weight,
                   const std::optional<Tensor>& bias = std::nullopt);
Tensor convolution_relu(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias,
                        const ConvAttrs& attrs);

}  // namespace ath
