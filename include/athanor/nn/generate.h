// Decoding autoregressive models: beam search and sampling (greedy, temperature, top-k,
// top-p) over a batch, for any model written as a step function: given the last token of each
// live hypothesis and the model's state, return next-token log-probabilities and the new state.
// Beam search reorders the state's rows as hypotheses are kept, so a recurrent state (or a
// key-value cache) follows its hypothesis.
//
//   // A toy model: a fixed table of next-token log-probabilities (a Markov chain), no state.
//   Tensor table = log_softmax(randn({5, 5}), 1);
//   seq::StepFn step = [&](const Tensor& last, const std::vector<Tensor>& state) {
//     return seq::Step{index_select(table, 0, last), state};
//   };
//   Tensor start = from_vector<int64_t>({0, 3});                  // two prompts of one token
//   auto beams = seq::beam_search(step, start, {}, {.beam = 4, .max_len = 6, .eos = 4});
//   auto drawn = seq::sample(step, start, {}, {.max_len = 6, .top_k = 3, .seed = 1});
//   assert(beams.size() == 2 && drawn.size() == 2 && drawn[0].size() <= 6);
//
// Runs with autograd off. Scores are float64 on the host; the step function's tensors stay
// wherever the model keeps them.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "athanor/tensor/tensor.h"

namespace ath::seq {

struct Step {
  Tensor log_probs;           // [B, V]: log-probabilities of the next token per hypothesis
  std::vector<Tensor> state;  // the new state; row i of each tensor (on its batch dim) = hyp. i
};
// last: int64 [B], the last token of each hypothesis; state: as the previous Step returned (the
// start state first), rows reordered to follow the hypotheses.
using StepFn = std::function<Step(const Tensor& last, const std::vector<Tensor>& state)>;

struct BeamSearchOptions {
  int64_t beam = 4;
  int64_t max_len = 50;  // generated tokens at most (an eos counts)
  int64_t eos = -1;      // the end token; -1: none (every hypothesis runs max_len tokens)
  // Hypotheses are ranked by log P / length^length_penalty (0: raw log-probability; 1: per
  // token), as Hugging Face's; must be >= 0.
  double length_penalty = 1.0;
  int64_t n_best = 1;  // in [1, beam]
  // The dim of each state tensor that indexes hypotheses (default 0 for all; an LSTM's (h, c)
  // [layers, B, H] use 1).
  std::vector<int64_t> state_batch_dims;
};

struct Hypothesis {
  std::vector<int64_t> tokens;  // generated tokens (the eos included when one ended it)
  double log_prob = 0;          // their summed log-probability
  double score = 0;             // log_prob / tokens^length_penalty: the ranking
};

// start_tokens: int64 [N]; start_state: each tensor with N rows on its batch dim. Per sample, the
// n_best finished hypotheses, best first. With a beam as wide as the number of sequences it is
// exact (the search stops a sample only when no live hypothesis can still beat its finished ones).
std::vector<std::vector<Hypothesis>> beam_search(const StepFn& step, const Tensor& start_tokens,
                                                 const std::vector<Tensor>& start_state,
                                                 const BeamSearchOptions& options = {});

struct SamplingOptions {
  int64_t max_len = 50;
  int64_t eos = -1;
  double temperature = 1.0;  // 0: greedy (the most likely token, the first on ties)
  int64_t top_k = 0;         // keep the k most likely tokens (0: all)
  double top_p = 1.0;        // keep the smallest set whose probability reaches top_p (nucleus)
  uint64_t seed = 0;         // draws are a function of (seed, step, sample): reproducible
  std::vector<int64_t> state_batch_dims;
};

// Per sample, the generated tokens (stopping after an eos or at max_len).
std::vector<std::vector<int64_t>> sample(const StepFn& step, const Tensor& start_tokens,
                                         const std::vector<Tensor>& start_state,
                                         const SamplingOptions& options = {});

}  // namespace ath::seq
