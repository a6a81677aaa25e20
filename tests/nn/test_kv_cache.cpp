// CharTransformer's incremental decoding (models/char_transformer.h step + empty_cache): the
// same logits as the full forward at every position, and beam search over the cache (its rows
// reordered by seq::beam_search) finds what beam search over full re-runs finds.
#include <gtest/gtest.h>

#include "athanor/athanor.h"
#include "athanor/models/char_transformer.h"
#include "athanor/nn/generate.h"

namespace ath {
namespace {

TEST(KVCache, StepsGiveTheFullForwardsLogits) {
  manual_seed(0);
  models::CharTransformer lm;
  lm.eval();
  NoGradGuard no_grad;
  const Tensor tokens = randint(0, 256, {3, 24});
  const Tensor full = lm(tokens);  // [3, 24, 256]
  std::vector<Tensor> cache = lm.empty_cache(3);
  for (int64_t t = 0; t < 24; ++t) {
    const Tensor step = lm.step(tokens.select(1, t), cache);
    EXPECT_LT(max(abs(step - full.select(1, t))).item<double>(), 1e-4) << "position " << t;
  }
  EXPECT_EQ(cache[0].shape(), Shape({3, 4, 24, 32}));
}

TEST(KVCache, BeamSearchOverTheCacheEqualsFullReruns) {
  manual_seed(1);
  models::CharTransformer lm;
  lm.eval();
  const Tensor prompts = from_vector<int64_t>({65, 97});
  seq::StepFn cached = [&](const Tensor& last, const std::vector<Tensor>& state) {
    std::vector<Tensor> cache = state;
    Tensor logits = lm.step(last, cache);
    return seq::Step{log_softmax(logits, 1), cache};
  };
  // Without a cache: the state is the token history, re-run in full every step.
  seq::StepFn rerun = [&](const Tensor& last, const std::vector<Tensor>& state) {
    Tensor history = cat({state[0], last.unsqueeze(1)}, 1);
    Tensor logits = lm(history).select(1, history.size(1) - 1);
    return seq::Step{log_softmax(logits, 1), {history}};
  };
  const seq::BeamSearchOptions o{.beam = 3, .max_len = 10, .n_best = 3};
  const auto a = seq::beam_search(cached, prompts, lm.empty_cache(2), o);
  const auto b = seq::beam_search(rerun, prompts, {zeros({2, 0}, kInt64)}, o);
  for (std::size_t s = 0; s < 2; ++s) {
    ASSERT_EQ(a[s].size(), b[s].size());
    for (std::size_t i = 0; i < a[s].size(); ++i) {
      EXPECT_EQ(a[s][i].tokens, b[s][i].tokens);
      EXPECT_NEAR(a[s][i].log_prob, b[s][i].log_prob, 1e-3);
    }
  }
}

TEST(KVCache, BadCallsNameTheModel) {
  models::CharTransformer lm;
  std::vector<Tensor> cache = lm.empty_cache(2);
  EXPECT_THROW(lm.step(zeros({3}, kInt64), cache), ShapeError);  // batch 3 for a cache of 2
  std::vector<Tensor> wrong(1);
  try {
    lm.step(zeros({2}, kInt64), wrong);
    ADD_FAILURE() << "no error";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("CharTransformer::step"), std::string::npos);
  }
}

}  // namespace
}  // namespace ath
