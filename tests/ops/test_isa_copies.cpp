// The kernels compiled once per ISA (the attention softmax, 2x2 max-pool, the losses, the
// LSTM/GRU cells) give bitwise-identical results at every ISA level this host can run, from
// baseline x86-64 up: each copy does the same IEEE operations in the same order. GELU's wide
// copies fuse multiply-adds (for speed), so they agree with each other bitwise and with the
// baseline copy to a few ulp. The optimizer updates have the same test in tests/optim
// (Optimizer.BaselineIsaLoopsGiveTheSameBits).
#include <gtest/gtest.h>

#include <cmath>

#include "athanor/athanor.h"
#include "athanor/nn/rnn.h"
#include "support/isa_cap.h"

namespace ath::testing {
namespace {

using Outputs = std::vector<std::vector<float>>;

// fn's outputs (forward values and input gradients) at each ISA level, baseline first.
std::vector<Outputs> outputs_at_every_isa(const std::function<std::vector<Tensor>()>& fn) {
  std::vector<Outputs> results;
  for (CpuIsa isa : isas_up_to_current()) {
    ScopedMaxCpuIsa cap(isa);
    Outputs out;
    for (const Tensor& t : fn()) out.push_back(t.to(kFloat32).to_vector<float>());
    results.push_back(std::move(out));
  }
  return results;
}

// fn's outputs at each ISA level, compared bitwise with baseline's.
void expect_same_bits_at_every_isa(const std::function<std::vector<Tensor>()>& fn) {
  const std::vector<Outputs> results = outputs_at_every_isa(fn);
  for (std::size_t i = 1; i < results.size(); ++i) {
    ASSERT_EQ(results[i].size(), results[0].size());
    for (std::size_t k = 0; k < results[0].size(); ++k)
      EXPECT_EQ(results[i][k], results[0][k])
          << "output " << k << " differs at " << cpu_isa_name(static_cast<CpuIsa>(i));
  }
}

// x and the gradient of sum(f(x) * w) with respect to x, for a fixed random weight w.
std::vector<Tensor> value_and_grad(const Tensor& x0, const std::function<Tensor(Tensor)>& f) {
  Tensor x = x0.detach().requires_grad_();
  Tensor y = f(x);
  Generator gen(99);
  Tensor w = randn(y.shape(), {.generator = &gen});
  (y * w).sum().backward();
  return {y, x.grad()};
}

TEST(IsaCopies, Gelu) {
  Generator gen(1);
  Tensor x = randn({4099}, {.generator = &gen}) * 3;  // a vector tail at every width
  const std::vector<Outputs> results =
      outputs_at_every_isa([&] { return value_and_grad(x, [](Tensor t) { return gelu(t); }); });
  for (std::size_t i = 1; i < results.size(); ++i) {
    for (std::size_t k = 0; k < results[0].size(); ++k) {
      for (std::size_t j = 0; j < results[0][k].size(); ++j) {
        const float want = results[0][k][j], got = results[i][k][j];
        ASSERT_LE(std::abs(got - want), 4e-7f * (1 + std::abs(want)))
            << "output " << k << ", element " << j << " at " << cpu_isa_name(CpuIsa(i));
      }
      if (i > 1) {
        EXPECT_EQ(results[i][k], results[1][k]) << "AVX-512 vs AVX2, output " << k;
      }
    }
  }
}

TEST(IsaCopies, AttentionSoftmax) {
  Generator gen(2);
  Tensor x = randn({3, 37, 37}, {.generator = &gen}) * 4;
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal);
    expect_same_bits_at_every_isa([&] {
      return value_and_grad(x, [&](Tensor t) { return attention_softmax(t, 0.3, causal); });
    });
  }
}

TEST(IsaCopies, MaxPool2x2) {
  Generator gen(3);
  Tensor x = randn({2, 5, 29, 35}, {.generator = &gen});
  expect_same_bits_at_every_isa(
      [&] { return value_and_grad(x, [](Tensor t) { return max_pool2d(t, {.kernel = 2}); }); });
}

TEST(IsaCopies, Losses) {
  Generator gen(4);
  Tensor logits = randn({67, 19}, {.generator = &gen}) * 3;
  Tensor target = randint(0, 19, {67}, {.generator = &gen});
  Tensor a = randn({1031}, {.generator = &gen}), b = randn({1031}, {.generator = &gen});
  expect_same_bits_at_every_isa([&] {
    std::vector<Tensor> out = value_and_grad(logits, [&](Tensor t) {
      return cross_entropy(t, target, {.reduction = Reduction::None, .label_smoothing = 0.1});
    });
    const std::function<Tensor(Tensor)> pointwise[] = {
        [&](Tensor t) { return mse_loss(t, b, Reduction::Mean); },
        [&](Tensor t) { return l1_loss(t, b, Reduction::Sum); },
        [&](Tensor t) { return smooth_l1_loss(t, b, {.reduction = Reduction::None, .beta = 0.5}); },
        [&](Tensor t) { return huber_loss(t, b, {.reduction = Reduction::None}); }};
    for (const auto& loss : pointwise)
      for (const Tensor& t : value_and_grad(a, loss)) out.push_back(t);
    return out;
  });
}

TEST(IsaCopies, RecurrentCells) {
  manual_seed(5);
  nn::LSTM lstm({.input_size = 8, .hidden_size = 37, .batch_first = true});
  nn::GRU gru({.input_size = 8, .hidden_size = 37, .batch_first = true});
  Tensor x = randn({5, 6, 8});
  expect_same_bits_at_every_isa([&] {
    std::vector<Tensor> out = value_and_grad(x, [&](Tensor t) { return lstm(t); });
    for (const Tensor& t : value_and_grad(x, [&](Tensor t) { return gru(t); })) out.push_back(t);
    return out;
  });
}

}  // namespace
}  // namespace ath::testing
