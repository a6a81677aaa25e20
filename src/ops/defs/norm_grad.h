// Gradient formulas shared by layer_norm, group_norm and batch_norm (internal to src/ops/defs).
//
// All three normalize x by a mean and rstd computed over some of its elements, then apply a
// per-channel (or per-feature) affine. Reshaped to a canonical NormView they differ only in
// which dims the statistics reduce and how the weight broadcasts:
//   layer_norm  X [M, N]          stats [M, 1]        weight [1, N]         reduce {1}
//   group_norm  X [N, G, C/G, S]  stats [N, G, 1, 1]  weight [1, G, C/G, 1] reduce {2, 3}
//   batch_norm  X [N, C, S]       stats [1, C, 1]     weight [1, C, 1]      reduce {0, 2}
// so the double backward (the gradient of a *_backward op) and the gradient through the mean
// and rstd outputs are written once, in registered ops.
#pragma once

#include <functional>

#include "athanor/ops/nn_functional.h"

namespace ath::detail {

struct NormView {
  Shape x_shape, stat_shape, weight_shape;
  DimList reduce;
};

// A [0] float32 tensor standing in for an absent optional input (weight, bias, running stats):
// norm ops have fixed input positions so their save masks are fixed.
const Tensor& absent_input();
inline Tensor or_absent(const Tensor& t) { return t.defined() ? t : absent_input(); }

// Runs a norm forward op's backward: the gradients of y through the op's *_backward op (asked
// only for what needs a gradient) plus, when stats_differentiable, what flows into the mean,
// rstd (and, for batch_norm, unbiased variance) outputs. `run` calls the backward op on
// (g, x, mean, rstd, weight) with a mask.
void norm_forward_grad(BackwardContext& ctx, const NormView& v, bool has_weight, bool has_bias,
                       int weight_input, int bias_input, bool stats_differentiable,
                       const std::function<Outputs(TensorSpan, const NormGradMask&)>& run);

// The gradient of a norm *_backward op (inputs g, x, mean, rstd, weight; outputs dx, dweight,
// dbias). With stats_constant (batch_norm eval) dx = g * w * rstd and mean/rstd get none.
void norm_backward_grad(BackwardContext& ctx, const NormView& v, bool has_weight,
                        const NormGradMask& mask, bool stats_constant);

// Checks a norm backward op's inputs against the forward shapes and returns its outputs: dx
// (x's shape), dweight and dbias (weight_shape), each [0] where the mask skips it.
OutputSpec norm_backward_spec(TensorSpan in, const Shape& stat_shape, const Shape& weight_shape,
                              bool has_weight, const NormGradMask& mask);

// Statistics dtype for an input dtype: float64 for float64, else float32.
inline DType stat_dtype(DType t) { return t == kFloat64 ? kFloat64 : kFloat32; }

// Checks an optional per-channel/feature parameter: floating, of `shape`.
void check_param(const Tensor& t, bool present, const char* what, const Shape& shape,
                 const Tensor& x);

}  // namespace ath::detail
