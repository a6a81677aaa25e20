// Inference matrix products with the weight packed once: what the inference runtime's
// "pack_linear" pass (graph/passes.h) turns a float32 linear / linear_relu with a constant
// weight into. oneDNN's matmul reads a weight in its own blocked format fastest; athanor's linear
// hands it the [N, K] row-major weight as a transposed operand, which for one row of input (a
// batch-1 classifier) ran 3.4x slower here (37 against 11 us for 1 x 3136 x 128, one thread).
// The weight is reordered into the primitive's format when the graph is built. Products of at
// most 16K multiply-adds without GELU (a classifier's last layer at batch 1) skip oneDNN, whose
// call costs ~2 us at any size: their packed weight is the transposed [K, N] matrix, run by a
// direct loop.
//
//   #include "athanor/ops/linear_packed.h"
//   Tensor x = randn({4, 64}), w = randn({32, 64}), b = randn({32});
//   LinearPackedAttrs a{.rows = 4, .in_features = 64, .out_features = 32, .with_bias = true};
//   Tensor packed = linear_pack_weight(w, a);                 // once
//   Tensor y = linear_packed(x, packed, b, a);
//   assert(allclose(y, linear(x, w, b), {.rtol = 1e-4, .atol = 1e-4}));  // another sum order
//
// x is [..., K] with `rows` = the product of its leading dims (the primitive is built for it);
// the result is [..., N]. Not differentiable: for inference.
#pragma once

#include <optional>

#include "athanor/ops/op.h"
#include "athanor/tensor/tensor.h"

namespace ath {

struct LinearPackedAttrs {
  int64_t rows = 0, in_features = 0, out_features = 0;
  bool with_bias = false;
  bool relu = false;  // relu(x W^T + b), as linear_relu
  bool gelu = false;  // gelu(x W^T + b), the exact (erf) GELU, as oneDNN's post-op; not with relu
  // x W^T + b + r, r the last input (the output's elements, read as [rows, N] in row-major
  // order: a reshape of the output is fine), added by the primitive (a binary
  // post-op, before relu or gelu): a Transformer's residual connection without a separate add.
  bool residual = false;
  bool operator==(const LinearPackedAttrs&) const = default;
};

// (weight [N, K]) -> the packed weight (flat float32; oneDNN's size).
const Op<LinearPackedAttrs>& op_linear_pack_weight();
// (x [..., K], packed weight[, bias [N]]) -> [..., N].
const Op<LinearPackedAttrs>& op_linear_packed();

Tensor linear_pack_weight(const Tensor& weight, const LinearPackedAttrs& attrs);
// `residual` (given exactly when attrs.residual): added to the product (the output's elements).
Tensor linear_packed(const Tensor& x, const Tensor& packed_weight,
                     const std::optional<Tensor>& bias, const LinearPackedAttrs& attrs,
                     const std::optional<Tensor>& residual = std::nullopt);

}  // namespace ath
