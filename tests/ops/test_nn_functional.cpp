// NN functional behaviour beyond the op table: batch_norm's running-stat update, dropout's
// thread-independent mask and edge cases, embedding errors and padding gradients, and second
// derivatives (the backward ops' own gradients) for every op.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "athanor/athanor.h"
#include "ops/nn_reference.h"
#include "support/reference.h"

namespace ath::testing {
namespace {

using Tensors = std::vector<Tensor>;

// Test data from std::mt19937 (the creation ops' random draws are another family's).
Tensor randn64(const Shape& s, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d;
  std::vector<double> v(static_cast<std::size_t>(numel(s)));
  for (double& e : v) e = d(rng);
  return from_vector(v, s);
}

// ---- batch_norm running statistics ----------------------------------------------------------

TEST(BatchNormRunningStats, TrainingUpdatesWithMomentumAndUnbiasedVariance) {
  Tensor x = randn64({4, 3, 5}, 1).to(kFloat32);
  Tensor rm = from_vector<float>({0.1f, -0.2f, 0.3f});
  Tensor rv = from_vector<float>({1.0f, 2.0f, 0.5f});
  std::vector<double> rm0 = values(rm), rv0 = values(rv);
  const uint32_t version = rm.version();
  batch_norm(x, rm, rv, {}, {}, /*training=*/true, /*momentum=*/0.25, 1e-5);
  EXPECT_GT(rm.version(), version) << "the update is an in-place write";

  NormStats st = norm_stats(x.to(kFloat64), batch_norm_map(x.shape()));
  std::vector<double> got_m = values(rm), got_v = values(rv);
  for (int c = 0; c < 3; ++c) {
    double n = double(st.count[c]);
    double unbiased = st.var[c] * n / (n - 1);
    EXPECT_NEAR(got_m[c], 0.75 * rm0[c] + 0.25 * st.mean[c], 1e-6) << "channel " << c;
    EXPECT_NEAR(got_v[c], 0.75 * rv0[c] + 0.25 * unbiased, 1e-6) << "channel " << c;
  }
}

TEST(BatchNormRunningStats, EvalAndEmptyBatchLeaveThemAlone) {
  Tensor rm = from_vector<double>({0.5, -1.0}), rv = from_vector<double>({2.0, 3.0});
  batch_norm(randn64({3, 2}, 2), rm, rv, {}, {}, /*training=*/false);
  EXPECT_EQ(values(rm), (std::vector<double>{0.5, -1.0}));
  EXPECT_EQ(values(rv), (std::vector<double>{2.0, 3.0}));
  Tensor y = batch_norm(zeros({0, 2}, kFloat64), rm, rv, {}, {}, /*training=*/true);
  EXPECT_EQ(y.shape(), (Shape{0, 2}));
  EXPECT_EQ(values(rm), (std::vector<double>{0.5, -1.0}));
  EXPECT_EQ(values(rv), (std::vector<double>{2.0, 3.0}));
}

TEST(BatchNormRunningStats, MomentumOneTakesTheBatchStatsAndGradStillFlows) {
  Tensor x = randn64({6, 2, 3}, 3).requires_grad_();
  Tensor rm = zeros({2}, kFloat64), rv = ones({2}, kFloat64);
  Tensor y = batch_norm(x, rm, rv, {}, {}, true, /*momentum=*/1.0);
  NormStats st = norm_stats(x.detach(), batch_norm_map(x.shape()));
  for (int c = 0; c < 2; ++c) {
    EXPECT_NEAR(values(rm)[c], st.mean[c], 1e-12);
    EXPECT_NEAR(values(rv)[c], st.var[c] * 18.0 / 17.0, 1e-12);
  }
  // The in-place update of the buffers must not invalidate the graph.
  (y * y).sum().backward();
  EXPECT_TRUE(x.grad().defined());
  EXPECT_FALSE(rm.requires_grad());
}

// ---- dropout --------------------------------------------------------------------------------

TEST(Dropout, MaskIsBitwiseIdenticalWithOneOrTwoThreads) {
  const int saved = get_num_threads();
  Tensor x = randn64({3 * 65536 + 5}, 4).to(kFloat32);
  auto run = [&](int threads) {
    set_num_threads(threads);
    Generator g(99);
    return dropout(x, 0.3, true, &g);
  };
  Tensor a = run(1), b = run(2);
  set_num_threads(saved);
  ASSERT_EQ(a.nbytes(), b.nbytes());
  EXPECT_EQ(std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()), 0);
  // About 70% kept.
  std::vector<double> v = values(a);
  double kept = 0;
  for (double e : v) kept += e != 0;
  EXPECT_NEAR(kept / double(v.size()), 0.7, 0.01);
}

TEST(Dropout, ConsumesCountersAndGradientUsesTheSameMask) {
  Generator g(5);
  Tensor x = (randn64({1000}, 6) + 3.0).requires_grad_();  // nonzero, so y == 0 means dropped
  Tensor y1 = dropout(x, 0.4, true, &g);
  EXPECT_EQ(g.offset(), 250u) << "one word per element, four per Philox block";
  Tensor y2 = dropout(x, 0.4, true, &g);
  EXPECT_NE(values(y1), values(y2)) << "a second draw uses fresh counters";
  y1.sum().backward();
  std::vector<double> yv = values(y1), gv = values(x.grad());
  for (std::size_t i = 0; i < yv.size(); ++i) {
    EXPECT_EQ(gv[i], yv[i] != 0 ? 1.0 / 0.6 : 0.0) << "element " << i;
  }
}

TEST(Dropout, IdentityInEvalOrAtZeroAndZerosAtOne) {
  Tensor x = randn64({4, 4}, 7).requires_grad_();
  EXPECT_TRUE(dropout(x, 0.5, /*training=*/false).is_same(x));
  EXPECT_TRUE(dropout(x, 0.0, true).is_same(x));
  Tensor z = dropout(x, 1.0, true);
  for (double v : values(z)) EXPECT_EQ(v, 0.0);
  z.sum().backward();
  for (double v : values(x.grad())) EXPECT_EQ(v, 0.0);
  EXPECT_THROW(dropout(x, 1.01, false), ValueError) << "p is checked even in eval";
}

// ---- embedding ------------------------------------------------------------------------------

TEST(Embedding, OutOfRangeErrorNamesTheIndexAndTheTableSize) {
  Tensor w = zeros({5, 2});
  try {
    embedding(w, from_vector<int64_t>({1, 7, 2}));
    FAIL() << "no error";
  } catch (const IndexError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("embedding"), std::string::npos) << msg;
    EXPECT_NE(msg.find("index 7"), std::string::npos) << msg;
    EXPECT_NE(msg.find("num_embeddings=5"), std::string::npos) << msg;
  }
  EXPECT_THROW(embedding(w, from_vector<float>({1.0f})), DTypeError);
}

TEST(Embedding, PaddingRowsGetNoGradientAndRepeatsAccumulate) {
  Tensor w = randn64({4, 3}, 8).requires_grad_();
  Tensor idx = from_vector<int64_t>({0, 2, 2, 3, 2, 0}, Shape{2, 3});
  embedding(w, idx, /*padding_idx=*/-1).sum().backward();  // -1 is row 3
  std::vector<double> g = values(w.grad());
  const double want_rows[4] = {2, 0, 3, 0};
  for (int r = 0; r < 4; ++r) {
    for (int j = 0; j < 3; ++j) EXPECT_EQ(g[r * 3 + j], want_rows[r]) << r << "," << j;
  }
}

TEST(Embedding, BackwardIsBitwiseIdenticalWithOneOrTwoThreads) {
  const int saved = get_num_threads();
  std::mt19937_64 rng(3);
  std::vector<int64_t> iv(20000);
  for (int64_t& i : iv) i = static_cast<int64_t>(rng() % 50);
  Tensor idx = from_vector(iv);
  Tensor g = randn64({20000, 16}, 4).to(kFloat32);
  auto run = [&](int threads) {
    set_num_threads(threads);
    return call1(op_embedding_backward(), {g, idx}, EmbeddingBackwardAttrs{.num_weights = 50});
  };
  Tensor a = run(1), b = run(2);
  set_num_threads(saved);
  EXPECT_EQ(std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()), 0);
}

// ---- second derivatives -------------------------------------------------------------------

// Checks the gradient of <f(inputs), v> w.r.t. the inputs (computed with create_graph, so
// through the backward ops and their own formulas) against finite differences.
void expect_double_backward_ok(const std::function<Tensor(const Tensors&)>& f, Tensors inputs,
                               uint64_t seed) {
  for (Tensor& t : inputs) {
    if (t.is_floating_point()) t.requires_grad_();
  }
  Tensor v;
  {
    NoGradGuard ng;
    v = randn64(f(inputs).shape(), seed);
  }
  auto first = [&](const Tensors& in) {
    AutoGradMode enable(true);  // gradcheck runs its finite differences under no-grad
    Tensors diff;
    for (const Tensor& t : in) {
      if (t.requires_grad()) diff.push_back(t);
    }
    return grad({f(in)}, diff, {v}, {.retain_graph = true, .create_graph = true},
                /*allow_unused=*/true);
  };
  GradcheckResult r = gradcheck(first, inputs, {.atol = 1e-5, .rtol = 1e-3});
  EXPECT_TRUE(r.ok) << r.message;
}

TEST(NNDoubleBackward, Softmax) {
  expect_double_backward_ok([](const Tensors& x) { return softmax(x[0], 1); },
                            {randn64({2, 4, 3}, 10)}, 11);
}

TEST(NNDoubleBackward, LogSoftmax) {
  expect_double_backward_ok([](const Tensors& x) { return log_softmax(x[0], -1); },
                            {randn64({3, 5}, 12)}, 13);
}

TEST(NNDoubleBackward, LayerNorm) {
  expect_double_backward_ok([](const Tensors& x) { return layer_norm(x[0], {4}, x[1], x[2]); },
                            {randn64({3, 4}, 14), randn64({4}, 15), randn64({4}, 16)}, 17);
}

TEST(NNDoubleBackward, BatchNormTraining) {
  expect_double_backward_ok(
      [](const Tensors& x) { return batch_norm(x[0], {}, {}, x[1], x[2], true); },
      {randn64({3, 2, 2}, 18), randn64({2}, 19), randn64({2}, 20)}, 21);
}

TEST(NNDoubleBackward, BatchNormEval) {
  Tensor rm = randn64({2}, 22), rv = randn64({2}, 23) * 0.1 + 1.0;
  expect_double_backward_ok(
      [&](const Tensors& x) { return batch_norm(x[0], rm, rv, x[1], x[2], false); },
      {randn64({3, 2, 2}, 24), randn64({2}, 25), randn64({2}, 26)}, 27);
}

TEST(NNDoubleBackward, GroupNorm) {
  expect_double_backward_ok([](const Tensors& x) { return group_norm(x[0], 2, x[1], x[2]); },
                            {randn64({2, 4, 3}, 28), randn64({4}, 29), randn64({4}, 30)}, 31);
}

TEST(NNDoubleBackward, NormsWithoutAffine) {
  expect_double_backward_ok(
      [](const Tensors& x) {
        return layer_norm(x[0], {2, 3});
      },
      {randn64({2, 2, 3}, 32)}, 33);
  expect_double_backward_ok([](const Tensors& x) { return group_norm(x[0], 1); },
                            {randn64({2, 3, 2}, 34)}, 35);
}

TEST(NNDoubleBackward, EmbeddingWithPadding) {
  Tensor idx = from_vector<int64_t>({0, 2, 1, 2, 2});
  expect_double_backward_ok(
      [&](const Tensors& x) {
        Tensor e = embedding(x[0], idx, 1);
        return e * e;
      },
      {randn64({3, 2}, 36)}, 37);
}

TEST(NNDoubleBackward, Dropout) {
  expect_double_backward_ok(
      [](const Tensors& x) {
        Generator g(38);
        Tensor d = dropout(x[0], 0.5, true, &g);
        return d * d;
      },
      {randn64({3, 4}, 39)}, 40);
}

}  // namespace
}  // namespace ath::testing
