// Beam search and sampling (nn/generate.h): exact n-best against enumeration of every sequence
// of a Markov-chain model, state rows following their hypotheses (a stateful toy and an LSTM,
// checked by replaying each result alone), greedy agreement, seeded and distribution-true
// sampling, top-k / top-p, bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "athanor/athanor.h"
#include "athanor/nn/embedding.h"
#include "athanor/nn/generate.h"
#include "athanor/nn/linear.h"
#include "athanor/nn/rnn.h"
#include "support/expect_error.h"

namespace ath::seq {
namespace {

// A stateless model: next-token log-probabilities from a table indexed by the last token.
StepFn markov(const Tensor& table) {
  return [table](const Tensor& last, const std::vector<Tensor>& state) {
    return Step{index_select(table, 0, last), state};
  };
}

struct Scored {
  std::vector<int64_t> tokens;
  double log_prob, score;
};

// Every sequence the search can produce from `start`: up to max_len tokens, ending at the first
// eos or at max_len.
std::vector<Scored> every_sequence(const std::vector<double>& table, int64_t v, int64_t start,
                                   int64_t eos, int64_t max_len, double penalty) {
  std::vector<Scored> out;
  std::function<void(std::vector<int64_t>&, double, int64_t)> grow = [&](std::vector<int64_t>& seq,
                                                                         double lp, int64_t last) {
    for (int64_t t = 0; t < v; ++t) {
      seq.push_back(t);
      const double l = lp + table[static_cast<std::size_t>(last * v + t)];
      const auto len = static_cast<int64_t>(seq.size());
      if (t == eos || len == max_len) {
        out.push_back({seq, l, penalty == 0 ? l : l / std::pow(double(len), penalty)});
      } else {
        grow(seq, l, t);
      }
      seq.pop_back();
    }
  };
  std::vector<int64_t> seq;
  grow(seq, 0.0, start);
  std::stable_sort(out.begin(), out.end(),
                   [](const Scored& a, const Scored& b) { return a.score > b.score; });
  return out;
}

TEST(BeamSearch, WideBeamIsExact) {
  manual_seed(1);
  Tensor table = log_softmax(randn({4, 4}, {.dtype = kFloat64}) * 2, 1);
  const std::vector<double> tv = table.to_vector<double>();
  for (double penalty : {0.0, 1.0}) {
    SCOPED_TRACE(penalty);
    const auto hyps =
        beam_search(markov(table), from_vector<int64_t>({0, 2}), {},
                    {.beam = 500, .max_len = 4, .eos = 3, .length_penalty = penalty, .n_best = 6});
    for (int64_t s = 0; s < 2; ++s) {
      const auto want = every_sequence(tv, 4, s == 0 ? 0 : 2, 3, 4, penalty);
      ASSERT_EQ(hyps[s].size(), 6u);
      // Rank by rank the same scores; the sequences may swap within a tie (a Markov chain gives
      // reorderings of the same transitions equal scores), so each must be the enumeration's
      // sequence with that log-probability.
      std::map<std::vector<int64_t>, double> log_prob_of;
      for (const Scored& w : want) log_prob_of[w.tokens] = w.log_prob;
      std::vector<std::vector<int64_t>> seen;
      for (std::size_t i = 0; i < 6; ++i) {
        EXPECT_NEAR(hyps[s][i].score, want[i].score, 1e-12) << "sample " << s << " rank " << i;
        ASSERT_TRUE(log_prob_of.count(hyps[s][i].tokens)) << "rank " << i;
        EXPECT_NEAR(hyps[s][i].log_prob, log_prob_of[hyps[s][i].tokens], 1e-12);
        EXPECT_EQ(std::count(seen.begin(), seen.end(), hyps[s][i].tokens), 0);
        seen.push_back(hyps[s][i].tokens);
      }
    }
  }
}

TEST(BeamSearch, BeamOfOneIsGreedy) {
  manual_seed(2);
  Tensor table = log_softmax(randn({6, 6}), 1);
  const Tensor start = from_vector<int64_t>({0, 1, 5});
  const auto beams = beam_search(markov(table), start, {}, {.beam = 1, .max_len = 8});
  const auto greedy = sample(markov(table), start, {}, {.max_len = 8, .temperature = 0});
  for (std::size_t s = 0; s < 3; ++s) EXPECT_EQ(beams[s][0].tokens, greedy[s]);
}

// Sum of the step function's log-probabilities along `tokens`, run alone (batch 1).
double replay(const StepFn& step, int64_t start, std::vector<Tensor> state,
              const std::vector<int64_t>& tokens) {
  double lp = 0;
  int64_t last = start;
  for (int64_t t : tokens) {
    Step s = step(from_vector<int64_t>({last}), state);
    lp += s.log_probs.to(kFloat64).to_vector<double>()[static_cast<std::size_t>(t)];
    state = s.state;
    last = t;
  }
  return lp;
}

TEST(BeamSearch, StateRowsFollowTheirHypotheses) {
  // The state is each hypothesis' running token sum; the next distribution depends on it, so a
  // state row that did not follow its hypothesis would give a log_prob replay cannot reproduce.
  manual_seed(3);
  Tensor bias = randn({5, 7}, {.dtype = kFloat64});
  StepFn step = [bias](const Tensor& last, const std::vector<Tensor>& state) {
    Tensor sum = state[0] + last.to(kFloat64).unsqueeze(1);  // [B, 1]
    Tensor logits = index_select(bias, 0, remainder(sum.squeeze(1), 5).to(kInt64));
    return Step{log_softmax(logits, 1), {sum}};
  };
  const Tensor start = from_vector<int64_t>({1, 4});
  const Tensor sum0 = zeros({2, 1}, kFloat64);
  const auto hyps = beam_search(step, start, {sum0}, {.beam = 3, .max_len = 6, .n_best = 3});
  for (int64_t s = 0; s < 2; ++s) {
    for (const Hypothesis& h : hyps[s]) {
      EXPECT_NEAR(h.log_prob, replay(step, s == 0 ? 1 : 4, {zeros({1, 1}, kFloat64)}, h.tokens),
                  1e-9);
    }
  }
}

TEST(BeamSearch, DrivesAnLstmWithItsStateOnDimOne) {
  manual_seed(4);
  nn::Embedding emb({.num = 10, .dim = 8});
  nn::LSTM lstm({.input_size = 8, .hidden_size = 16});
  nn::Linear head({.in = 16, .out = 10});
  StepFn step = [&](const Tensor& last, const std::vector<Tensor>& state) {
    nn::LSTMOutput o = lstm.forward(emb(last).unsqueeze(0), {state[0], state[1]});  // T = 1
    return Step{log_softmax(head(o.output.squeeze(0)), 1), {o.state.h, o.state.c}};
  };
  const Tensor h0 = zeros({1, 2, 16}), c0 = zeros({1, 2, 16});
  const auto hyps =
      beam_search(step, from_vector<int64_t>({2, 7}), {h0, c0},
                  {.beam = 4, .max_len = 5, .eos = 0, .n_best = 4, .state_batch_dims = {1, 1}});
  for (int64_t s = 0; s < 2; ++s) {
    ASSERT_EQ(hyps[s].size(), 4u);
    for (const Hypothesis& h : hyps[s]) {
      EXPECT_NEAR(h.log_prob,
                  replay(step, s == 0 ? 2 : 7, {zeros({1, 1, 16}), zeros({1, 1, 16})}, h.tokens),
                  1e-4);
    }
  }
}

TEST(Sampling, SeededDrawsFollowTheDistribution) {
  // 20000 samples of one step from p = softmax(row): frequencies within 4 sigma.
  Tensor table = log_softmax(from_vector<double>({0.0, 1.0, -1.0, 0.5}).reshape({1, 4}), 1);
  const int64_t n = 20000;
  const Tensor start = zeros({n}, kInt64);
  const auto draws = sample(markov(table), start, {}, {.max_len = 1, .seed = 9});
  std::vector<double> count(4, 0);
  for (const auto& d : draws) count[static_cast<std::size_t>(d[0])] += 1;
  const std::vector<double> p = table.exp().to_vector<double>();
  for (std::size_t k = 0; k < 4; ++k) {
    EXPECT_NEAR(count[k] / n, p[k], 4 * std::sqrt(p[k] * (1 - p[k]) / n)) << k;
  }
  // Same seed, same draws; another seed, others.
  EXPECT_EQ(sample(markov(table), start, {}, {.max_len = 1, .seed = 9}), draws);
  EXPECT_NE(sample(markov(table), start, {}, {.max_len = 1, .seed = 10}), draws);
  // top_k = 2 draws only the two most likely (tokens 1 and 3); top_p = 0.01 only the first.
  for (const auto& d : sample(markov(table), start, {}, {.max_len = 1, .top_k = 2, .seed = 1})) {
    EXPECT_TRUE(d[0] == 1 || d[0] == 3);
  }
  for (const auto& d : sample(markov(table), start, {}, {.max_len = 1, .top_p = 0.01})) {
    EXPECT_EQ(d[0], 1);
  }
}

TEST(Sampling, StopsAtEosAndKeepsTheOthersGoing) {
  // Token 2 always follows 1, and eos (0) always follows 2; 3 repeats itself.
  Tensor table = full({4, 4}, -1e9, kFloat64);
  table.select(0, 1).select(0, 2).fill_(0.0);
  table.select(0, 2).select(0, 0).fill_(0.0);
  table.select(0, 3).select(0, 3).fill_(0.0);
  table.select(0, 0).select(0, 0).fill_(0.0);
  const auto out =
      sample(markov(table), from_vector<int64_t>({1, 3}), {}, {.max_len = 5, .eos = 0, .seed = 3});
  EXPECT_EQ(out[0], (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(out[1], (std::vector<int64_t>{3, 3, 3, 3, 3}));
}

TEST(Generate, BadInputNamesTheFunction) {
  Tensor table = log_softmax(randn({3, 3}), 1);
  const Tensor start = from_vector<int64_t>({0});
  using testing::expect_error_naming;
  expect_error_naming([&] { beam_search(markov(table), start, {}, {.beam = 0}); }, "beam_search");
  expect_error_naming([&] { beam_search(markov(table), start, {}, {.beam = 2, .n_best = 3}); },
                      "beam_search");
  expect_error_naming([&] { beam_search(markov(table), start, {}, {.max_len = 0}); },
                      "beam_search");
  expect_error_naming([&] { beam_search(markov(table), start, {}, {.length_penalty = -1}); },
                      "beam_search");
  expect_error_naming([&] { beam_search(markov(table), start.to(kFloat32), {}); }, "beam_search");
  expect_error_naming([&] { beam_search(markov(table), start, {zeros({2, 3})}); }, "beam_search");
  StepFn wrong = [](const Tensor& last, const std::vector<Tensor>& s) {
    return Step{zeros({last.numel() + 1, 3}), s};
  };
  expect_error_naming([&] { beam_search(wrong, start, {}); }, "beam_search");
  expect_error_naming([&] { sample(markov(table), start, {}, {.temperature = -1}); }, "sample");
  expect_error_naming([&] { sample(markov(table), start, {}, {.top_p = 0}); }, "sample");
  expect_error_naming([&] { sample(markov(table), start, {}, {.top_k = -1}); }, "sample");
}

}  // namespace
}  // namespace ath::seq
