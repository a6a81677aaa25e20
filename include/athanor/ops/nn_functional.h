// Neural-network functional ops: softmax, log_softmax, layer_norm, batch_norm, group_norm,
// dropout, embedding. Each is one registered op with a fused CPU kernel, and its gradient is a
// dedicated registered backward op (softmax_backward, layer_norm_backward, ...) with its own
// fused kernel; the backward ops are differentiable too (double backward).
//
//   Tensor logits = randn({2, 10}), x = randn({4, 8}), w = ones({8}), b = zeros({8});
//   Tensor p = softmax(logits, -1);                        // max-subtracted, any dim
//   Tensor y = layer_norm(x, {8}, w, b);                   // w, b optional: pass {} for none
//   Tensor rm = zeros({8}), rv = ones({8});                // running stats of the 8 channels
//   Tensor z = batch_norm(x, rm, rv, w, b, /*training=*/true);   // updates rm, rv in place
//   Generator gen(0);
//   Tensor d = dropout(x, 0.1, /*training=*/true, &gen);   // Philox mask: thread-independent
//   Tensor table = randn({10, 8}), ids = from_vector<int64_t>({0, 3, 3});
//   Tensor e = embedding(table, ids, /*padding_idx=*/0);   // table [num, dim], ids int64
//   assert(e.size(0) == 3 && e.size(1) == 8);
//
// Semantics follow PyTorch (torch.nn.functional); float32, float64 and bfloat16 (computed in
// float) are supported. Statistics (mean, rstd) are float32, or float64 for float64 inputs.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "athanor/core/rng.h"
#include "athanor/ops/op.h"

namespace ath {

// ---- softmax --------------------------------------------------------------------------------

// exp(x - max) / sum(exp(x - max)) along dim.
Tensor softmax(const Tensor& x, int64_t dim);
// x - max - log(sum(exp(x - max))) along dim.
Tensor log_softmax(const Tensor& x, int64_t dim);

struct SoftmaxAttrs {
  int64_t dim = -1;  // normalized by the public functions
  bool operator==(const SoftmaxAttrs&) const = default;
};
const Op<SoftmaxAttrs>& op_softmax();
const Op<SoftmaxAttrs>& op_log_softmax();
// softmax_backward(g, y) = y * (g - sum(g * y, dim)), y = softmax(x).
const Op<SoftmaxAttrs>& op_softmax_backward();
// log_softmax_backward(g, y) = g - exp(y) * sum(g, dim), y = log_softmax(x).
const Op<SoftmaxAttrs>& op_log_softmax_backward();

// ---- normalization --------------------------------------------------------------------------

// Normalizes over the last normalized_shape.size() dims (biased variance), then applies the
// elementwise affine weight/bias (shape normalized_shape) when given.
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5);

// x: [N, C], [N, C, L] or [N, C, H, W]. Training normalizes with the batch statistics and, when
// running stats are given, updates them in place: r = (1 - momentum) * r + momentum * batch
// (unbiased variance for running_var), as torch does. Eval uses the running stats.
Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight = {}, const Tensor& bias = {}, bool training = false,
                  double momentum = 0.1, double eps = 1e-5);

// x: [N, C, *]; statistics per (sample, group of C / num_groups channels); weight/bias [C].
Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5);

// Which of (dx, dweight, dbias) a norm backward op computes; the others come back as [0].
using NormGradMask = std::array<bool, 3>;

// Norm ops have fixed input positions (so their save masks are fixed): an absent weight, bias
// or running stat is passed as an empty [0] tensor and the has_* attributes say which are real.
//
// Inputs: x, weight, bias. Outputs: y, mean, rstd (x's shape with the normalized dims as 1).
struct LayerNormAttrs {
  Shape normalized_shape;
  double eps = 1e-5;
  bool has_weight = false, has_bias = false;
  bool operator==(const LayerNormAttrs&) const = default;
};
// Inputs: g, x, mean, rstd, weight. Outputs: dx, dweight, dbias.
struct LayerNormBackwardAttrs {
  Shape normalized_shape;
  bool has_weight = false;
  NormGradMask mask{true, true, true};
  bool operator==(const LayerNormBackwardAttrs&) const = default;
};
const Op<LayerNormAttrs>& op_layer_norm();
const Op<LayerNormBackwardAttrs>& op_layer_norm_backward();
// layer_norm_backward with a residual gradient added to dx: inputs (g, x, mean, rstd, weight,
// addend) -> (dx + addend, dweight, dbias). A pre-norm residual block's backward sums the
// gradient through the norm with the one through the skip connection; this writes that sum in the
// pass that computes dx, so dx is never written and read back. Bit-identical to the backward
// followed by add (the addend is added to each dx element after it is rounded, as add would).
// Made by the graph compiler's norm_add pass; not differentiable itself.
const Op<LayerNormBackwardAttrs>& op_layer_norm_backward_add();

// Inputs: x, running_mean, running_var, weight, bias. Outputs: y, mean [C], rstd [C], and the
// unbiased batch variance [C] (training; [0] in eval) for the running-stat update. In eval,
// mean/rstd are those of the running stats.
struct BatchNormAttrs {
  bool training = false;
  double eps = 1e-5;
  bool has_running = false, has_weight = false, has_bias = false;
  bool operator==(const BatchNormAttrs&) const = default;
};
// Inputs: g, x, mean, rstd, weight. Outputs: dx, dweight, dbias. Eval mode
// treats mean/rstd as constants (running stats are buffers, not differentiated).
struct BatchNormBackwardAttrs {
  bool training = false;
  bool has_weight = false;
  NormGradMask mask{true, true, true};
  bool operator==(const BatchNormBackwardAttrs&) const = default;
};
const Op<BatchNormAttrs>& op_batch_norm();
const Op<BatchNormBackwardAttrs>& op_batch_norm_backward();

// Inputs: x, weight, bias. Outputs: y, mean [N, G], rstd [N, G].
struct GroupNormAttrs {
  int64_t num_groups = 1;
  double eps = 1e-5;
  bool has_weight = false, has_bias = false;
  bool operator==(const GroupNormAttrs&) const = default;
};
// Inputs: g, x, mean, rstd, weight. Outputs: dx, dweight, dbias.
struct GroupNormBackwardAttrs {
  int64_t num_groups = 1;
  bool has_weight = false;
  NormGradMask mask{true, true, true};
  bool operator==(const GroupNormBackwardAttrs&) const = default;
};
const Op<GroupNormAttrs>& op_group_norm();
const Op<GroupNormBackwardAttrs>& op_group_norm_backward();

// ---- dropout --------------------------------------------------------------------------------

// Zeroes each element with probability p and scales the rest by 1 / (1 - p). Element i is kept
// when philox_uniform(seed, base, i) >= p, with counters reserved from `generator` (the global
// one when null), so the mask does not depend on the thread count. Eval or p == 0 returns x.
Tensor dropout(const Tensor& x, double p = 0.5, bool training = true,
               Generator* generator = nullptr);

// Outputs: y and the keep mask (bool).
struct DropoutAttrs {  // (x, seed_offset): see creation.h's random convention
  double p = 0.5;
  bool operator==(const DropoutAttrs&) const = default;
};
// dropout_backward(g, mask) = mask ? g * scale : 0.
struct DropoutBackwardAttrs {
  double scale = 1;
  bool operator==(const DropoutBackwardAttrs&) const = default;
};
const Op<DropoutAttrs>& op_dropout();
const Op<DropoutBackwardAttrs>& op_dropout_backward();

// ---- embedding ------------------------------------------------------------------------------

// Rows of weight [num, dim] picked by integer indices (any shape): [*indices.shape, dim].
// Rows at padding_idx (negative counts from num) get no gradient.
Tensor embedding(const Tensor& weight, const Tensor& indices,
                 std::optional<int64_t> padding_idx = {});

struct EmbeddingAttrs {
  int64_t padding_idx = -1;  // normalized; -1: none
  bool operator==(const EmbeddingAttrs&) const = default;
};
// embedding_backward(g, indices): zeros [num_weights, dim] with g's rows added at their
// indices, in index order (deterministic); rows at padding_idx stay zero.
struct EmbeddingBackwardAttrs {
  int64_t num_weights = 0;
  int64_t padding_idx = -1;
  bool operator==(const EmbeddingBackwardAttrs&) const = default;
};
const Op<EmbeddingAttrs>& op_embedding();
const Op<EmbeddingBackwardAttrs>& op_embedding_backward();

}  // namespace ath
