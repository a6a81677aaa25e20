// CTC decoding (nn/ctc_decode.h): greedy against its definition and pyctcdecode's inputs; prefix
// beam search against enumeration of every frame path (exact n-best and probabilities with a
// wide beam), against pyctcdecode 0.5.0 (tests/golden/ctc_decode.json, written by
// tools/golden/ctc_decode.py); the scorer hook, the token bonus and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "athanor/athanor.h"
#include "athanor/nn/ctc_decode.h"
#include "support/expect_error.h"
#include "support/golden.h"

namespace ath::seq {
namespace {

std::vector<int64_t> to_tokens(const Tensor& t) {
  return t.numel() == 0 ? std::vector<int64_t>{} : t.to(kInt64).to_vector<int64_t>();
}

TEST(CtcDecode, GreedyMergesRepeatsAndDropsBlanks) {
  // Frames' best classes: 1 1 0 1 2 2 0 0 3 -> "1 1 2 3" (the blank separates the two 1s).
  const std::vector<int64_t> best{1, 1, 0, 1, 2, 2, 0, 0, 3};
  Tensor lp = full({9, 4}, -5.0);
  for (int64_t t = 0; t < 9; ++t)
    lp.select(0, t).select(0, best[static_cast<std::size_t>(t)]).fill_(-0.1);
  EXPECT_EQ(ctc_greedy_decode(lp), (std::vector<std::vector<int64_t>>{{1, 1, 2, 3}}));
  // The input length cuts the frames: the first 5 give "1 1 2".
  Tensor batched = lp.unsqueeze(1);
  EXPECT_EQ(ctc_greedy_decode(batched, from_vector<int64_t>({5})),
            (std::vector<std::vector<int64_t>>{{1, 1, 2}}));
  EXPECT_EQ(ctc_greedy_decode(batched, from_vector<int64_t>({0})),
            (std::vector<std::vector<int64_t>>{{}}));
}

// log P(labels) for every label sequence, by enumerating the C^T frame paths of one sample.
std::map<std::vector<int64_t>, double> every_labeling(const std::vector<double>& lp, int64_t frames,
                                                      int64_t classes, int64_t blank) {
  std::map<std::vector<int64_t>, double> out;
  int64_t count = 1;
  for (int64_t t = 0; t < frames; ++t) count *= classes;
  for (int64_t p = 0; p < count; ++p) {
    std::vector<int64_t> labels;
    double score = 0;
    int64_t v = p, prev = -1;
    for (int64_t t = 0; t < frames; ++t, v /= classes) {
      const int64_t k = v % classes;
      score += lp[static_cast<std::size_t>(t * classes + k)];
      if (k != prev && k != blank) labels.push_back(k);
      prev = k;
    }
    auto [it, fresh] = out.emplace(labels, score);
    if (!fresh) {
      const double m = std::max(it->second, score);
      it->second = m + std::log(std::exp(it->second - m) + std::exp(score - m));
    }
  }
  return out;
}

TEST(CtcDecode, WideBeamIsExact) {
  manual_seed(3);
  const int64_t frames = 6, classes = 3;
  for (int64_t blank : {0, 2}) {
    Tensor lp = log_softmax(randn({frames, classes}, {.dtype = kFloat64}) * 1.5, 1);
    auto exact = every_labeling(lp.to_vector<double>(), frames, classes, blank);
    std::vector<std::pair<double, std::vector<int64_t>>> ranked;
    for (const auto& [labels, p] : exact) ranked.emplace_back(p, labels);
    std::sort(ranked.begin(), ranked.end(),
              [](const auto& a, const auto& b) { return a.first > b.first; });
    const auto hyps = ctc_beam_search(lp, {}, {.beam_width = 1000, .blank = blank, .n_best = 5})[0];
    ASSERT_EQ(hyps.size(), 5u);
    for (std::size_t i = 0; i < 5; ++i) {
      EXPECT_EQ(hyps[i].tokens, ranked[i].second) << "rank " << i;
      EXPECT_NEAR(hyps[i].log_prob, ranked[i].first, 1e-12) << "rank " << i;
      EXPECT_EQ(hyps[i].score, hyps[i].log_prob);
    }
  }
}

// pyctcdecode ranks beams by an approximate score; on these emissions its best sequence is often
// less probable than the prefix beam search's (e.g. -20.23 against -19.67 nats). The search must
// never do worse here with a beam of 4 or more, and the probability it reports must be the exact
// one (ctc_loss's).
TEST(CtcDecode, FindsSequencesAtLeastAsProbableAsPyctcdecode) {
  int64_t better = 0;
  for (const testing::GoldenCase& c : testing::load_golden("ctc_decode")) {
    SCOPED_TRACE(c.name);
    const Tensor& lp = c.t("log_probs");
    EXPECT_EQ(ctc_greedy_decode(lp)[0], to_tokens(c.t("greedy")));
    const auto best =
        ctc_beam_search(lp, {}, {.beam_width = c.attrs.at("beam_width").get<int64_t>()})[0][0];
    const double reference = c.t("beam_log_prob").item<double>();
    // A beam of 1 keeps one prefix per frame: either search may get lucky there.
    if (c.attrs.at("beam_width").get<int64_t>() >= 4) {
      EXPECT_GE(best.log_prob, reference - 1e-9);
    }
    better += best.log_prob > reference + 1e-9;
    const std::vector<int64_t> tokens = best.tokens;
    const int64_t len = static_cast<int64_t>(tokens.size());
    const Tensor targets = len == 0 ? zeros({1, 0}, kInt64) : from_vector(tokens).reshape({1, len});
    const double exact = -ctc_loss(lp.unsqueeze(1), targets, std::vector<int64_t>{lp.shape()[0]},
                                   std::vector<int64_t>{len}, {.reduction = Reduction::Sum})
                              .item<double>();
    EXPECT_NEAR(best.log_prob, exact, 1e-9 * std::abs(exact));
  }
  std::printf("more probable than pyctcdecode's answer in %lld of the cases\n",
              static_cast<long long>(better));
}

TEST(CtcDecode, BatchesAndLengthsDecodeEachSampleAlone) {
  manual_seed(4);
  Tensor lp = log_softmax(randn({20, 3, 5}), 2);
  Tensor lengths = from_vector<int64_t>({20, 12, 0});
  const auto batch = ctc_beam_search(lp, lengths, {.beam_width = 6, .n_best = 2});
  ASSERT_EQ(batch.size(), 3u);
  for (int64_t n = 0; n < 2; ++n) {
    const int64_t f = n == 0 ? 20 : 12;
    const auto alone =
        ctc_beam_search(lp.select(1, n).narrow(0, 0, f), {}, {.beam_width = 6, .n_best = 2})[0];
    ASSERT_EQ(batch[static_cast<std::size_t>(n)].size(), alone.size());
    for (std::size_t i = 0; i < alone.size(); ++i) {
      EXPECT_EQ(batch[static_cast<std::size_t>(n)][i].tokens, alone[i].tokens);
      EXPECT_NEAR(batch[static_cast<std::size_t>(n)][i].log_prob, alone[i].log_prob, 1e-6);
    }
  }
  // No frames: the empty sequence, probability 1.
  ASSERT_EQ(batch[2].size(), 1u);
  EXPECT_TRUE(batch[2][0].tokens.empty());
  EXPECT_EQ(batch[2][0].log_prob, 0.0);
}

TEST(CtcDecode, ScorerAndBonusSteerTheSearch) {
  manual_seed(5);
  Tensor lp = log_softmax(randn({30, 4}, {.dtype = kFloat64}), 1);
  const auto plain = ctc_beam_search(lp, {}, {.beam_width = 8})[0][0];
  ASSERT_FALSE(plain.tokens.empty());
  const int64_t banned = plain.tokens[0];
  int64_t calls = 0;
  CtcBeamSearchOptions o{.beam_width = 8, .scorer = [&](std::span<const int64_t>, int64_t token) {
                           ++calls;
                           return token == banned ? -100.0 : 0.0;
                         }};
  const auto steered = ctc_beam_search(lp, {}, o)[0][0];
  EXPECT_GT(calls, 0);
  EXPECT_EQ(std::count(steered.tokens.begin(), steered.tokens.end(), banned), 0);
  EXPECT_NEAR(steered.score, steered.log_prob, 1e-12);  // no banned token: scorer sum 0
  // A large per-token penalty prefers shorter outputs; a bonus longer ones.
  const auto short_out = ctc_beam_search(lp, {}, {.beam_width = 8, .token_bonus = -5})[0][0];
  const auto long_out = ctc_beam_search(lp, {}, {.beam_width = 8, .token_bonus = 5})[0][0];
  EXPECT_LT(short_out.tokens.size(), plain.tokens.size());
  EXPECT_GT(long_out.tokens.size(), plain.tokens.size());
  EXPECT_NEAR(long_out.score, long_out.log_prob + 5.0 * static_cast<double>(long_out.tokens.size()),
              1e-9);
}

TEST(CtcDecode, BadInputNamesTheFunction) {
  Tensor lp = log_softmax(randn({5, 2, 4}), 2);
  using testing::expect_error_naming;
  expect_error_naming([&] { ctc_beam_search(lp, {}, {.beam_width = 0}); }, "ctc_beam_search");
  expect_error_naming([&] { ctc_beam_search(lp, {}, {.beam_width = 2, .n_best = 3}); },
                      "ctc_beam_search");
  expect_error_naming([&] { ctc_beam_search(lp, {}, {.blank = 4}); }, "ctc_beam_search");
  expect_error_naming(
      [&] {
        ctc_beam_search(lp, from_vector<int64_t>({6, 5}));
      },
      "ctc_beam_search");
  expect_error_naming([&] { ctc_beam_search(lp, from_vector<int64_t>({5})); }, "ctc_beam_search");
  expect_error_naming([&] { ctc_beam_search(lp, from_vector<float>({5, 5})); }, "ctc_beam_search");
  expect_error_naming([&] { ctc_greedy_decode(zeros({5})); }, "ctc_greedy_decode");
  expect_error_naming([&] { ctc_greedy_decode(zeros({5, 2, 4}, kInt64)); }, "ctc_greedy_decode");
  expect_error_naming(
      [&] {
        ctc_greedy_decode(lp, from_vector<int64_t>({-1, 5}));
      },
      "ctc_greedy_decode");
  expect_error_naming([&] { ctc_greedy_decode(lp, {}, -1); }, "ctc_greedy_decode");
}

}  // namespace
}  // namespace ath::seq
