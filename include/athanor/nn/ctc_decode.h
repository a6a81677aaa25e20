// Decoding CTC emissions (per-frame log-probabilities over classes, blank included) into label
// sequences: greedy (best path) and prefix beam search with an optional external scorer such as
// a character n-gram language model.
//
//   Tensor log_probs = log_softmax(randn({40, 2, 6}), 2);          // [T, N, C], 0 is the blank
//   Tensor lengths = from_vector<int64_t>({40, 25});
//   std::vector<std::vector<int64_t>> best = seq::ctc_greedy_decode(log_probs, lengths);
//   auto beams = seq::ctc_beam_search(log_probs, lengths, {.beam_width = 8, .n_best = 3});
//   assert(best.size() == 2 && beams[0].size() == 3);
//   assert(beams[0][0].log_prob >= beams[0][1].log_prob);        // best first
//
// Both run on the host in float64 (not differentiable). Greedy takes each frame's most likely
// class (the first on ties), merges repeats and drops blanks. The beam search keeps, per label
// prefix, the probability of the frames so far ending in a blank and in the prefix's last label,
// so the alignments of one prefix add up (Hannun et al. 2014); with a beam as wide as the
// number of prefixes it returns the exact most probable label sequences and their
// probabilities (tests/nn/test_ctc_decode.cpp checks this against enumeration of all paths).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <vector>

#include "athanor/tensor/tensor.h"

namespace ath::seq {

// log_probs: [T, N, C] (or [T, C] for one sequence); input_lengths: [N] int64/int32 frames per
// sample (undefined: all T). One label sequence per sample.
std::vector<std::vector<int64_t>> ctc_greedy_decode(const Tensor& log_probs,
                                                    const Tensor& input_lengths = {},
                                                    int64_t blank = 0);

// An external score for appending `token` to `prefix` (e.g. a language model's log-probability
// of the next character); added times scorer_weight when the prefix is extended.
using CtcPrefixScorer = std::function<double(std::span<const int64_t> prefix, int64_t token)>;

struct CtcBeamSearchOptions {
  int64_t beam_width = 10;  // prefixes kept after each frame
  int64_t blank = 0;
  int64_t n_best = 1;  // hypotheses returned per sample (at most beam_width)
  // Classes whose log-probability at a frame is below this are not tried there (pyctcdecode's
  // token_min_logp); -inf tries every class.
  double token_min_log_prob = -std::numeric_limits<double>::infinity();
  CtcPrefixScorer scorer;    // optional
  double scorer_weight = 1;  // alpha of an LM
  double token_bonus = 0;    // added per emitted label (beta: a word or character bonus)
};

struct CtcHypothesis {
  std::vector<int64_t> tokens;
  double log_prob = 0;  // log P(tokens | emissions): every alignment summed
  double score = 0;     // log_prob + scorer_weight * scorer sum + token_bonus * tokens (ranking)
};

// Per sample, the n_best hypotheses by score, best first.
std::vector<std::vector<CtcHypothesis>> ctc_beam_search(const Tensor& log_probs,
                                                        const Tensor& input_lengths = {},
                                                        const CtcBeamSearchOptions& options = {});

}  // namespace ath::seq
