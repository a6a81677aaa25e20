// The shape rules and gradient formulas that linear / convolution share with their fused-epilogue
// forms (linear_relu, convolution_relu: epilogue.cpp), which differ only in the ReLU applied to
// the output and, in the backward, to the incoming gradient.
#pragma once

#include "athanor/ops/conv.h"
#include "athanor/ops/op.h"

namespace ath::detail {

OutputSpec linear_spec(TensorSpan in, const NoAttrs&);
// The gradients of linear's inputs given the gradient g of its output.
void linear_backward(BackwardContext& ctx, const Tensor& g);

OutputSpec convolution_spec(TensorSpan in, const ConvAttrs& a);
void convolution_backward(BackwardContext& ctx, const ConvAttrs& a, const Tensor& g);

}  // namespace ath::detail
