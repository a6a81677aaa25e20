// Linear, LayerNorm, Embedding, Dropout, Sequential: PyTorch goldens (same weights in, same
// outputs and gradients out), default initialisation statistics, and bad options.
#include <gtest/gtest.h>

#include <cmath>

#include "athanor/athanor.h"
#include "athanor/nn/dropout.h"
#include "athanor/nn/embedding.h"
#include "athanor/nn/linear.h"
#include "athanor/nn/normalization.h"
#include "athanor/nn/sequential.h"
#include "support/module_golden.h"

namespace ath::nn {
namespace {

using testing::check_module_golden;
using testing::GoldenCase;
using testing::load_golden;

const GoldenCase& golden(const std::string& name) {
  static const std::vector<GoldenCase> cases = load_golden("layers_basic");
  for (const auto& c : cases) {
    if (c.name == name) return c;
  }
  throw KeyError("no golden case " + name);
}

TEST(Linear, MatchesPyTorch) {
  Linear fc({.in = 5, .out = 3});
  check_module_golden(golden("linear"), fc);
  Linear nb({.in = 4, .out = 6, .bias = false});
  EXPECT_EQ(nb.state_dict().keys(), std::vector<std::string>{"weight"});
  check_module_golden(golden("linear_nobias_3d"), nb);
  EXPECT_EQ(fc.to_string(), "Linear(in_features=5, out_features=3, bias=True)");
}

TEST(Linear, DefaultInitIsPyTorchsBound) {
  manual_seed(3);
  Linear fc({.in = 400, .out = 300});
  const double bound = 1.0 / std::sqrt(400.0);
  EXPECT_LE(max(fc.weight.abs()).item<double>(), bound);
  EXPECT_GT(max(fc.weight.abs()).item<double>(), 0.99 * bound);
  // U(-b, b) has variance b^2 / 3.
  EXPECT_NEAR(fc.weight.pow(2).mean().item<double>(), bound * bound / 3, 0.02 * bound * bound);
  EXPECT_LE(max(fc.bias.abs()).item<double>(), bound);
  EXPECT_THROW(Linear({.in = -1, .out = 2}), ValueError);
  EXPECT_THROW(fc(ones({2, 3})), ShapeError);
}

TEST(LayerNorm, MatchesPyTorch) {
  LayerNorm ln({.shape = {3, 4}});
  check_module_golden(golden("layer_norm"), ln);
  EXPECT_THROW(LayerNorm({.shape = {}}), ValueError);
}

TEST(Embedding, MatchesPyTorchWithPadding) {
  Embedding emb({.num = 10, .dim = 4, .padding_idx = 2});
  check_module_golden(golden("embedding_padding"), emb);
  Embedding fresh({.num = 10, .dim = 4, .padding_idx = -8});
  EXPECT_EQ(*fresh.options.padding_idx, 2);
  EXPECT_EQ(fresh.weight.select(0, 2).abs().sum().item<double>(), 0.0);
  EXPECT_THROW(Embedding({.num = 10, .dim = 4, .padding_idx = 10}), IndexError);
  EXPECT_THROW(fresh(from_vector<int64_t>({11})), IndexError);
}

TEST(Sequential, MatchesPyTorchAndNamesChildrenByIndex) {
  Sequential seq;
  seq.emplace_back<Linear>(LinearOptions{.in = 6, .out = 8});
  seq.emplace_back<LayerNorm>(LayerNormOptions{.shape = {8}});
  seq.emplace_back<Linear>(LinearOptions{.in = 8, .out = 2});
  check_module_golden(golden("sequential"), seq);
  EXPECT_EQ(seq.at<Linear>(2).options.out, 2);
  EXPECT_THROW(seq.at<Linear>(1), ValueError);
  EXPECT_THROW(seq[3], IndexError);
}

TEST(Dropout, TrainDropsEvalPasses) {
  Dropout drop({.p = 0.25});
  Tensor x = ones({10000});
  Tensor y = drop(x);
  const double kept = ne(y, 0).to(kFloat64).mean().item<double>();
  EXPECT_NEAR(kept, 0.75, 0.02);
  EXPECT_NEAR(max(y).item<double>(), 1 / 0.75, 1e-6);
  drop.eval();
  EXPECT_EQ(drop(x).to_vector<float>(), x.to_vector<float>());
  EXPECT_THROW(Dropout({.p = 1.5}), ValueError);
}

}  // namespace
}  // namespace ath::nn
