// Matrix products and convolutions with a fused activation epilogue: relu(linear(x, w, b)),
// gelu(linear(x, w, b)) (exact, erf form) and relu(convolution(x, w, b)) in one kernel, the
// activation applied by oneDNN to each output block while it is still in registers or cache (an
// eltwise post-op), instead of a second pass over the output in memory. The compiler's
// "epilogue" pass puts the ReLU forms in place of a linear or convolution whose only reader is a
// relu, the inference-only "gelu" pass linear_gelu (graph/passes.h); they are ordinary registry
// ops too.
//
//   #include "athanor/ops/epilogue.h"
//   Tensor x = randn({4, 8}), w = randn({3, 8}), b = randn({3});
//   assert(allclose(linear_relu(x, w, b), relu(linear(x, w, b))));
//   assert(allclose(linear_gelu(x, w, b), gelu(linear(x, w, b)), {.rtol = 1e-5, .atol = 1e-6}));
//
// Gradients: the ReLU's mask comes from the output (y > 0 exactly where the pre-activation was),
// so only the output is kept for the backward, not the pre-activation. linear_gelu's backward
// recomputes the pre-activation from the inputs (GELU's derivative needs it). oneDNN evaluates
// erf by its own polynomial: linear_gelu is within a few ulp of gelu(linear(...)), not equal.
#pragma once

#include <optional>

#include "athanor/ops/conv.h"
#include "athanor/tensor/tensor.h"

namespace ath {

const Op<NoAttrs>& op_linear_relu();
const Op<NoAttrs>& op_linear_gelu();
const Op<ConvAttrs>& op_convolution_relu();  // not transposed

Tensor linear_relu(const Tensor& x, const Tensor& weight,
                   const std::optional<Tensor>& bias = std::nullopt);
Tensor linear_gelu(const Tensor& x, const Tensor& weight,
                   const std::optional<Tensor>& bias = std::nullopt);
Tensor convolution_relu(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias,
                        const ConvAttrs& attrs);

}  // namespace ath
