// Connectionist temporal classification (CTC) loss, as torch.nn.functional.ctc_loss: the
// negative log-likelihood of each target sequence summed over every alignment of it to the
// input frames (labels with blanks between and repeats merged).
//
//   Tensor logits = randn({50, 4, 20});                        // [T, N, C] frames, batch, classes
//   Tensor log_probs = log_softmax(logits, 2);
//   Tensor targets = randint(1, 20, {4, 10});                  // [N, S] padded; 0 is the blank
//   Tensor input_lengths = full({4}, int64_t(50));             // frames used per sample
//   Tensor target_lengths = from_vector<int64_t>({10, 7, 3, 0});
//   Tensor loss = ctc_loss(log_probs, targets, input_lengths, target_lengths);   // 0-dim
//   assert(loss.dim() == 0);
//
// Targets are padded [N, S] (S at least the longest target) or the targets of all samples
// concatenated ([sum(target_lengths)]). Lengths are int64 or int32 [N]. An unbatched input is
// log_probs [T, C] with targets [S] and 0-dim (or [1]) lengths.
//
// The gradient with respect to log_probs is the exact one, -(posterior of each label at each
// frame) for frames inside the input length and 0 past it. PyTorch returns that plus
// exp(log_probs), a term log_softmax's backward cancels: gradients with respect to the logits
// before the log_softmax, which is what a model trains, are the same.
//
// The recursion runs in float64 in linear space, renormalized at every frame (one exp per frame
// and label, no log-sum-exp per cell); a sample whose probability mass falls below 1e-200 of a
// frame's scale (log-probabilities hundreds of nats apart, or an impossible alignment) is
// recomputed in log space, so results never underflow.
#pragma once

#include <cstdint>
#include <span>

#include "athanor/ops/losses.h"
#include "athanor/ops/op.h"

namespace ath {

struct CtcLossOptions {
  int64_t blank = 0;  // the blank's class index
  // None: the per-sample loss [N]; Mean: each divided by its target length (at least 1), then
  // the batch mean; Sum: the batch sum.
  Reduction reduction = Reduction::Mean;
  // Infinite losses (no alignment fits: an input shorter than its target needs) and their
  // gradients become 0, as in torch.
  bool zero_infinity = false;
};

Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, const CtcLossOptions& options = {});
Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets,
                std::span<const int64_t> input_lengths, std::span<const int64_t> target_lengths,
                const CtcLossOptions& options = {});

// The ops. ctc_loss inputs: log_probs [T, N, C] (floating), targets ([N, S] or concatenated),
// input_lengths [N], target_lengths [N]. Outputs: the per-sample loss [N] (log_probs' dtype),
// the per-frame normalized forward variables [N, T, 2 * S_max + 1] (float64; read by the
// backward op) and the per-sample log-likelihood [N] (float64, before zero_infinity).
struct CtcLossAttrs {
  int64_t blank = 0;
  bool zero_infinity = false;
  bool operator==(const CtcLossAttrs&) const = default;
};
const Op<CtcLossAttrs>& op_ctc_loss();
// Inputs: g [N] (the per-sample loss gradient), log_probs, targets, input_lengths,
// target_lengths, and the forward op's outputs 1 and 2. Output: dlog_probs [T, N, C].
const Op<CtcLossAttrs>& op_ctc_loss_backward();

}  // namespace ath
