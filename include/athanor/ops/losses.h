// Loss functions with PyTorch 1.13's semantics (torch.nn.functional), each one registered op with
// a fused CPU kernel (loss and reduction in one pass) and a fused registered backward op; the
// backward ops are differentiable too (double backward), through formulas in registered ops.
//
//   Tensor logits = randn({4, 3}), labels = from_vector<int64_t>({1, 0, 2, 1});
//   Tensor loss = cross_entropy(logits, labels);                         // [N, C], int64 [N]
//   Tensor l2 = cross_entropy(logits, labels, {.ignore_index = 0, .label_smoothing = 0.1});
//   Tensor pred = randn({4}), target = randn({4});
//   Tensor l3 = mse_loss(pred, target, Reduction::Sum);
//   Tensor z = randn({4, 3}), y = rand({4, 3}), pw = full({3}, 2.0);   // y: targets in [0, 1]
//   Tensor l4 = binary_cross_entropy_with_logits(z, y, {.pos_weight = pw});   // pw [C]
//   Tensor log_q = log_softmax(logits, 1), p = softmax(randn({4, 3}), 1);
//   Tensor l5 = kl_div(log_q, p, {.reduction = Reduction::BatchMean});
//   assert(loss.dim() == 0 && l3.dim() == 0);   // reduced to 0-dim tensors
//
// The options structs hold PyTorch's defaults, so an nn layer (nn::CrossEntropyLoss...) stores
// one and forwards it. Floating dtypes: float32, float64, and bfloat16/float16 computed in
// float. Class-index targets are int64 (as torch); int32 and uint8 are accepted too (torch 1.13
// refuses int32, accepts uint8).
#pragma once

#include <array>
#include <cstdint>

#include "athanor/ops/op.h"

namespace ath {

// How a loss reduces its per-element values. BatchMean (sum / input.size(0)) is kl_div's only.
enum class Reduction : uint8_t { None, Mean, Sum, BatchMean };
const char* reduction_name(Reduction r);  // "none", "mean", "sum", "batchmean"

// ---- classification -------------------------------------------------------------------------

struct CrossEntropyLossOptions {
  Tensor weight = {};           // [C] per-class rescaling, or undefined
  int64_t ignore_index = -100;  // class-index targets equal to it add nothing (and no weight)
  Reduction reduction = Reduction::Mean;
  double label_smoothing = 0;  // in [0, 1]
};

// input: [C], [N, C] or [N, C, d1, ...] logits (classes at dim 1, or 0 for 1-D input).
// target: class indices of input's shape without the class dim, or class probabilities of
// input's shape (floating; ignore_index must then be negative). With class indices, 'mean'
// divides by the summed weight of the non-ignored targets (NaN when that is 0, e.g. all
// ignored or an empty batch), as torch does; with probabilities it divides by N * d1 * ...
// Class indices run one fused op (log-softmax + nll + smoothing in one pass per row);
// probabilities are a composition of registered ops (differentiable in input and target).
Tensor cross_entropy(const Tensor& input, const Tensor& target,
                     const CrossEntropyLossOptions& options = {});

struct NllLossOptions {
  Tensor weight = {};
  int64_t ignore_index = -100;
  Reduction reduction = Reduction::Mean;
};
// input: log-probabilities [C], [N, C] or [N, C, d1, ...]; target: class indices.
Tensor nll_loss(const Tensor& input, const Tensor& target, const NllLossOptions& options = {});

struct BceLossOptions {
  Tensor weight = {};  // broadcast to input's shape
  Reduction reduction = Reduction::Mean;
};
// -w * (y * log(x) + (1 - y) * log(1 - x)), each log clamped at -100. input in [0, 1] (checked
// per element), target of input's shape.
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target,
                            const BceLossOptions& options = {});

struct BceWithLogitsLossOptions {
  Tensor weight = {};      // broadcast to input's shape
  Tensor pos_weight = {};  // weight of the positive term, broadcast to input's shape ([C] for
                           // input [N, C]: one per class)
  Reduction reduction = Reduction::Mean;
};
// w * ((1 - y) * x + (1 + (pos_weight - 1) * y) * softplus(-x)), stable for any x.
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BceWithLogitsLossOptions& options = {});

// ---- regression -----------------------------------------------------------------------------
// input and target broadcast (as torch: it warns, we don't); gradients flow to both.

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);

struct SmoothL1LossOptions {
  Reduction reduction = Reduction::Mean;
  double beta = 1;  // >= 0; 0 is l1_loss
};
// |d| < beta ? 0.5 * d^2 / beta : |d| - 0.5 * beta, d = input - target.
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target,
                      const SmoothL1LossOptions& options = {});

struct HuberLossOptions {
  Reduction reduction = Reduction::Mean;
  double delta = 1;  // > 0
};
// |d| < delta ? 0.5 * d^2 : delta * (|d| - 0.5 * delta).
Tensor huber_loss(const Tensor& input, const Tensor& target, const HuberLossOptions& options = {});

struct KlDivLossOptions {
  Reduction reduction = Reduction::Mean;  // BatchMean is the mathematically right one
  bool log_target = false;
};
// input holds log-probabilities. target * (log(target) - input) (0 where target == 0), or with
// log_target exp(target) * (target - input).
Tensor kl_div(const Tensor& input, const Tensor& target, const KlDivLossOptions& options = {});

// ---- the registered ops -----------------------------------------------------------------------

// cross_entropy with class indices. Inputs: x [*, C, *], target (integer), weight ([C], or a [0]
// placeholder when !has_weight). Outputs: the loss, lse = logsumexp over the class dim
// (target's shape, float32 or float64: saved for backward) and total_weight (0-dim, same dtype:
// the 'mean' denominator).
struct CrossEntropyAttrs {
  Reduction reduction = Reduction::Mean;
  int64_t ignore_index = -100;
  double label_smoothing = 0;
  bool has_weight = false;
  bool operator==(const CrossEntropyAttrs&) const = default;
};
const Op<CrossEntropyAttrs>& op_cross_entropy();
// Inputs: g (the loss's gradient), x, target, weight, lse, total_weight. Output: dx =
// g * (softmax(x) * a - b) / denominator per position, where b is the weighted, smoothed one-hot
// target (zero on ignored positions) and a = sum(b) over classes. lse must be x's (the forward's
// output): its gradient is folded into x's, so lse and total_weight get none.
const Op<CrossEntropyAttrs>& op_cross_entropy_backward();

// nll_loss. Inputs: x (log-probabilities), target, weight. Outputs: loss, total_weight.
struct NllLossAttrs {
  Reduction reduction = Reduction::Mean;
  int64_t ignore_index = -100;
  bool has_weight = false;
  Shape input_shape;  // backward only: the shape of dx
  bool operator==(const NllLossAttrs&) const = default;
};
const Op<NllLossAttrs>& op_nll_loss();
// Inputs: g, target, weight, total_weight. Output: dx, zero except dx[target] = -w * g / denom.
const Op<NllLossAttrs>& op_nll_loss_backward();

// The elementwise losses: x and y of one shape (the public functions broadcast them), weight
// and pos_weight broadcastable to it ([0] placeholders when absent). The backward ops take
// (g, x, y[, weight[, pos_weight]]), g 0-dim or of x's shape, and return (dx, dy) of x's
// shape; one not asked for by grad_mask comes back as [0].
struct PointwiseLossAttrs {
  Reduction reduction = Reduction::Mean;
  double param = 1;         // smooth_l1_loss: beta; huber_loss: delta
  bool log_target = false;  // kl_div
  bool has_weight = false, has_pos_weight = false;
  std::array<bool, 2> grad_mask{true, true};  // backward ops: compute dx, dy
  bool operator==(const PointwiseLossAttrs&) const = default;
};
const Op<PointwiseLossAttrs>& op_mse_loss();
const Op<PointwiseLossAttrs>& op_mse_loss_backward();
const Op<PointwiseLossAttrs>& op_l1_loss();
const Op<PointwiseLossAttrs>& op_l1_loss_backward();
const Op<PointwiseLossAttrs>& op_smooth_l1_loss();
const Op<PointwiseLossAttrs>& op_smooth_l1_loss_backward();
const Op<PointwiseLossAttrs>& op_huber_loss();
const Op<PointwiseLossAttrs>& op_huber_loss_backward();
const Op<PointwiseLossAttrs>& op_binary_cross_entropy();  // inputs x, y, weight
const Op<PointwiseLossAttrs>& op_binary_cross_entropy_backward();
const Op<PointwiseLossAttrs>& op_binary_cross_entropy_with_logits();  // x, y, weight, pos_weight
const Op<PointwiseLossAttrs>& op_binary_cross_entropy_with_logits_backward();
const Op<PointwiseLossAttrs>& op_kl_div();
const Op<PointwiseLossAttrs>& op_kl_div_backward();

}  // namespace ath
