// nn::CRF: a linear-chain conditional random field over tag sequences, equal to pytorch-crf
// 0.7.2's torchcrf.CRF (same parameter names, shapes, masks, reductions and Viterbi ties), so a
// state dict moves between the two. A tagger (BiLSTM-CRF, a transformer with a CRF head) feeds
// it per-step tag scores; it adds a learned score for every tag-to-tag transition, trains with
// the sequence-level log-likelihood and decodes the best whole sequence.
//
//   nn::CRF crf({.num_tags = 5});
//   Tensor emissions = randn({7, 2, 5}).requires_grad_();  // [T, B, num_tags] per-step scores
//   Tensor tags = randint(0, 5, {7, 2});                   // gold tags [T, B], int64
//   Tensor mask = lt(arange(7).unsqueeze(1), from_vector<int64_t>({7, 4}));  // lengths 7, 4
//   Tensor loss = crf.nll(emissions, tags, mask, nn::CRFReduction::Mean);    // 0-dim
//   loss.backward();  // gradients of emissions and the three transition parameters
//   std::vector<std::vector<int64_t>> paths = crf.decode(emissions, mask);  // Viterbi
//   assert(paths.size() == 2 && paths[0].size() == 7 && paths[1].size() == 4);
//   assert(crf.transitions.grad().defined() && crf.named_parameters()[2].first == "transitions");
//
// The score of tags y_0..y_{n-1} (n = the sample's length) is start[y_0] + sum_t emissions[t,
// y_t] + sum_{t>0} transitions[y_{t-1}, y_t] + end[y_{n-1}]; the log-likelihood is that minus
// the log of the sum over all K^n sequences of exp(score) (the forward algorithm, in log space
// through logsumexp, so it is differentiable through athanor's ops).
//
// Shapes: emissions [T, B, K] (or [B, T, K] with batch_first); tags int64 and mask (bool or
// uint8) take emissions' first two dims, in the same order. The mask's first step must be on
// for every sample; pytorch-crf's rule for a mask with gaps is kept too (the end transition
// reads the tag at index sum(mask) - 1). Bad input throws an ath::Error naming CRF.
//
// Constraints (set_allowed_transitions): a disallowed transition, start or end tag scores -inf,
// in the likelihood and in decode alike. The parameters keep their values; the constrained
// entries are read as -inf, so their gradients are 0 and training never moves them (unless
// weight decay does, which is harmless: they stay ignored). A sequence that uses one has
// log-likelihood -inf, and decode never returns one. The constraints are plain state, not in
// state_dict(): set them again after building the module.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "athanor/nn/module.h"

namespace ath::nn {

// pytorch-crf's reduction argument: None gives [B]; Sum and Mean over the batch; TokenMean
// divides the sum by the number of mask-on steps.
enum class CRFReduction : uint8_t { None, Sum, Mean, TokenMean };
const char* crf_reduction_name(CRFReduction r);  // "none", "sum", "mean", "token_mean"

struct CRFOptions {
  int64_t num_tags = 0;
  bool batch_first = false;  // emissions [B, T, K], tags and mask [B, T]
};

class CRF : public Module {
 public:
  // Parameters are float32, drawn U(-0.1, 0.1) from the default generator; a num_tags below 1
  // is a ValueError.
  explicit CRF(CRFOptions options);
  using Module::forward;     // the one-tensor form: a ValueError naming CRF
  using Module::operator();  // likewise

  // pytorch-crf's forward: the log-likelihood of tags given emissions (to maximize).
  Tensor log_likelihood(const Tensor& emissions, const Tensor& tags, const Tensor& mask = {},
                        CRFReduction reduction = CRFReduction::Sum) const;
  // Minus the log-likelihood: the loss to minimize.
  Tensor nll(const Tensor& emissions, const Tensor& tags, const Tensor& mask = {},
             CRFReduction reduction = CRFReduction::Sum) const;
  Tensor forward(const Tensor& emissions, const Tensor& tags, const Tensor& mask = {},
                 CRFReduction reduction = CRFReduction::Sum) {
    return log_likelihood(emissions, tags, mask, reduction);
  }
  // Runs forward, then the forward hooks, which see emissions as the input.
  Tensor operator()(const Tensor& emissions, const Tensor& tags, const Tensor& mask = {},
                    CRFReduction reduction = CRFReduction::Sum) {
    Tensor out = forward(emissions, tags, mask, reduction);
    run_forward_hooks(emissions, out);
    return out;
  }

  // The best tag sequence of each sample (Viterbi, in float64 on the host; not differentiable),
  // as many tags as the sample's mask has on. Ties go to the lower tag, as torch.max gives. With
  // constraints that leave a sample no allowed sequence, a ValueError.
  std::vector<std::vector<int64_t>> decode(const Tensor& emissions, const Tensor& mask = {}) const;

  // allowed[i][j]: may tag j follow tag i (bool or uint8 [K, K]); start_allowed / end_allowed:
  // may a sequence start / end with tag j ([K]; undefined: every tag may). Replaces earlier
  // constraints.
  void set_allowed_transitions(const Tensor& allowed, const Tensor& start_allowed = {},
                               const Tensor& end_allowed = {});
  void clear_allowed_transitions();
  bool has_constraints() const { return disallowed_.defined(); }

  // Re-draws the three parameters from U(-0.1, 0.1), as pytorch-crf's reset_parameters.
  void reset_parameters();
  std::string extra_repr() const override;

  CRFOptions options;
  Tensor start_transitions;  // [K] score of starting with tag j
  Tensor end_transitions;    // [K] score of ending with tag j
  Tensor transitions;        // [K, K] score of tag i followed by tag j

 private:
  struct Scores {
    Tensor start, end, trans;
  };
  // The parameters with every disallowed entry at -inf (the parameters when unconstrained).
  Scores scores() const;

  // bool, true where disallowed; undefined when no constraint is set.
  Tensor disallowed_, start_disallowed_, end_disallowed_;
};

}  // namespace ath::nn
