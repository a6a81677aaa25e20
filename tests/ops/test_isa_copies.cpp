// The kernels compiled once per ISA (the attention softmax, layer norm, 2x2 max-pool, the losses,
// the LSTM/GRU cells, the float32 sum over leading dims) give bitwise-identical results at every
// ISA level this host can run, from baseline x86-64 up: each copy does the same IEEE operations in
// the same order. GELU's wide copies fuse multiply-adds (for speed), so they agree with each other
// bitwise and with the baseline copy to a few ulp; so do self_attention's. The optimizer updates
// have the same test in tests/optim (Optimizer.BaselineIsaLoopsGiveTheSameBits).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>

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

// The float32 sum over leading dims (the bias gradient) runs a copy per ISA: the same bits at
// every level, and the same bits as the reduce-along-rows path (a transposed view is summed
// there), which keeps the same order. Shapes: a block of the whole inner dim with a row count
// not a multiple of 16; 300 outputs (a 256-wide block and a 44-wide one); an outer dim of 3.
TEST(IsaCopies, SumOverLeadingDims) {
  Generator gen(3);
  const Tensor a = randn({100, 64}, {.generator = &gen}),
               b = randn({333, 300}, {.generator = &gen}),
               c = randn({3, 50, 20}, {.generator = &gen});
  expect_same_bits_at_every_isa([&] {
    return std::vector<Tensor>{sum(a, {0}), sum(b, {0}), sum(c, {1}), sum(b, {0}, true)};
  });
  for (const Tensor& x : {a, b}) {
    const Tensor rows_view = x.t().contiguous().t();  // not contiguous: the other path
    ASSERT_FALSE(rows_view.is_contiguous());
    EXPECT_TRUE(equal(sum(x, {0}), sum(rows_view, {0})));
    EXPECT_TRUE(
        allclose(sum(x, {0}).to(kFloat64), sum(x.to(kFloat64), {0}), {.rtol = 1e-5, .atol = 1e-5}));
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

// self_attention's wide copies (and its backward's) contract their multiply-adds into FMAs, in the
// same order, and meet each row's max and sums in lanes.h's 16-lane order, so AVX-512 and AVX2
// (16- and 8-float registers) agree bitwise; the baseline copy (no FMA) agrees to rounding. Odd
// head dims (a padded strip), sequences of 37 and 128 (a short last row block), both layouts,
// causal or not.
TEST(IsaCopies, SelfAttentionWideCopiesAgree) {
  Generator gen(3);
  struct Case {
    int64_t batch, len, heads, d;
  };
  for (const Case c : {Case{2, 37, 3, 20}, Case{1, 128, 4, 32}, Case{3, 9, 2, 7}}) {
    for (bool batch_first : {true, false}) {
      for (bool causal : {false, true}) {
        SCOPED_TRACE(::testing::Message() << c.len << " x " << c.heads << " heads of " << c.d
                                          << (batch_first ? ", batch first" : ", seq first")
                                          << (causal ? ", causal" : ""));
        const Shape shape = batch_first ? Shape{c.batch, c.len, 3 * c.heads * c.d}
                                        : Shape{c.len, c.batch, 3 * c.heads * c.d};
        Tensor x = randn(shape, {.generator = &gen}) * 2;
        Shape out_shape = shape;
        out_shape[2] /= 3;
        Tensor dy = randn(out_shape, {.generator = &gen});
        const double scale = 1.0 / std::sqrt(static_cast<double>(c.d));
        const SelfAttentionAttrs attrs{
            .heads = c.heads, .scale = scale, .causal = causal, .batch_first = batch_first};
        const std::vector<Outputs> results = outputs_at_every_isa([&] {
          return std::vector<Tensor>{self_attention(x, c.heads, scale, causal, batch_first),
                                     call1(op_self_attention_backward(), {dy, x}, attrs)};
        });
        for (std::size_t i = 1; i < results.size(); ++i) {
          for (std::size_t k = 0; k < 2; ++k) {  // the output, then dx (sums over a row: 1e-4)
            const std::vector<float>&want = results[0][k], &got = results[i][k];
            const float tol = k == 0 ? 1e-5f : 1e-4f;
            ASSERT_EQ(got.size(), want.size());
            for (std::size_t j = 0; j < want.size(); ++j)
              ASSERT_LE(std::abs(got[j] - want[j]), tol * (1 + std::abs(want[j])))
                  << (k == 0 ? "output" : "dx") << " element " << j << " at "
                  << cpu_isa_name(CpuIsa(i));
            if (i > 1) {
              EXPECT_EQ(results[i][k], results[1][k]) << "AVX-512 vs AVX2, output " << k;
            }
          }
        }
      }
    }
  }
}

// Rows of 37 (a partial strip at every width), 128 (W4's rows: whole strips) and 5000 (over one
// moment chunk): the forward, the gradients of x, weight and bias, and the fused backward + add.
TEST(IsaCopies, LayerNorm) {
  Generator gen(6);
  for (int64_t n : {37, 128, 5000}) {
    SCOPED_TRACE(n);
    const int64_t m = n == 5000 ? 3 : 70;
    Tensor x = randn({m, n}, {.generator = &gen}) * 2 + 1;
    Tensor w = randn({n}, {.generator = &gen}), b = randn({n}, {.generator = &gen});
    Tensor g = randn({m, n}, {.generator = &gen}), addend = randn({m, n}, {.generator = &gen});
    expect_same_bits_at_every_isa([&] {
      Tensor xr = x.detach().requires_grad_(), wr = w.detach().requires_grad_();
      Tensor br = b.detach().requires_grad_();
      Tensor y = layer_norm(xr, {n}, wr, br);
      (y * g).sum().backward();
      const LayerNormAttrs fa{.normalized_shape = {n}, .has_weight = true, .has_bias = true};
      ath::Outputs f = call(op_layer_norm(), std::vector<Tensor>{x, w, b}, fa);
      ath::Outputs fused =
          call(op_layer_norm_backward_add(), std::vector<Tensor>{g, x, f[1], f[2], w, addend},
               LayerNormBackwardAttrs{.normalized_shape = {n}, .has_weight = true});
      return std::vector<Tensor>{y,         f[1],     f[2],     xr.grad(), wr.grad(),
                                 br.grad(), fused[0], fused[1], fused[2]};
    });
  }
}

TEST(IsaCopies, MaxPool2x2) {
  Generator gen(3);
  Tensor x = randn({2, 5, 29, 35}, {.generator = &gen});
  expect_same_bits_at_every_isa(
      [&] { return value_and_grad(x, [](Tensor t) { return max_pool2d(t, {.kernel = 2}); }); });
}

// bfloat16 max-pool returns the winning input itself: the same bits as pooling the float32
// values (NaN wins, first maximum's index), at every ISA.
TEST(IsaCopies, MaxPool2x2In16BitsIsTheFloat32PoolOfTheSameValues) {
  for (DType t : {kBFloat16, kFloat16}) {
    SCOPED_TRACE(dtype_name(t));
    Generator gen(4);
    Tensor x = randn({2, 3, 14, 18}, {.generator = &gen}).to(t);
    {
      NoGradGuard no_grad;
      x.view({-1}).narrow(0, 17, 1).fill_(std::nan(""));
    }
    for (CpuIsa isa : isas_up_to_current()) {
      ScopedMaxCpuIsa cap(isa);
      auto [y, idx] = max_pool2d_with_indices(x, {.kernel = 2});
      auto [y32, idx32] = max_pool2d_with_indices(x.to(kFloat32), {.kernel = 2});
      EXPECT_TRUE(allclose(y.to(kFloat32), y32, {.rtol = 0, .atol = 0, .equal_nan = true}))
          << cpu_isa_name(isa);
      EXPECT_TRUE(equal(idx, idx32)) << cpu_isa_name(isa);
    }
  }
}

// The dense bfloat16 <-> float32 and bool -> bfloat16 conversions (mixed precision's casts) give
// BFloat16's scalar results bit for bit at every ISA: every bfloat16 pattern widened, and
// float32 patterns around every rounding case (ties to even, carries into the exponent,
// overflow to inf, subnormals, NaNs of both signs) narrowed.
TEST(IsaCopies, Bfloat16ConversionsMatchTheScalarDefinition) {
  std::vector<uint16_t> all16(1 << 16);
  for (std::size_t i = 0; i < all16.size(); ++i) all16[i] = static_cast<uint16_t>(i);
  std::vector<float> f32;
  for (uint32_t hi = 0; hi < (1u << 16); hi += 3) {
    for (uint32_t lo : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu}) {
      f32.push_back(std::bit_cast<float>((hi << 16) | lo));
    }
  }
  const Tensor wide = from_vector(f32);
  for (CpuIsa isa : isas_up_to_current()) {
    SCOPED_TRACE(cpu_isa_name(isa));
    ScopedMaxCpuIsa cap(isa);
    // float32 -> bfloat16
    const Tensor narrow = wide.to(kBFloat16);
    const auto* got = static_cast<const uint16_t*>(narrow.data_ptr());
    for (std::size_t i = 0; i < f32.size(); ++i)
      ASSERT_EQ(got[i], BFloat16(f32[i]).bits) << "float bits " << std::bit_cast<uint32_t>(f32[i]);
    // bfloat16 -> float32, every pattern
    Tensor b16 = empty({1 << 16}, kBFloat16);
    std::memcpy(b16.data_ptr(), all16.data(), all16.size() * sizeof(uint16_t));
    const std::vector<float> back = b16.to(kFloat32).to_vector<float>();
    for (std::size_t i = 0; i < all16.size(); ++i)
      ASSERT_EQ(std::bit_cast<uint32_t>(back[i]), static_cast<uint32_t>(all16[i]) << 16) << i;
    // bool -> bfloat16
    const Tensor mask = ne(from_vector<float>({0, 1, 2, 0, -1}), 0).to(kBFloat16);
    EXPECT_EQ(mask.to(kFloat32).to_vector<float>(), (std::vector<float>{0, 1, 1, 0, 1}));
  }
}

// The same for float16 (16-mixed's casts) against Half's scalar conversions, which
// DType.HalfConvertsLikeIeeeBinary16 checks against float64 arithmetic.
TEST(IsaCopies, Float16ConversionsMatchTheScalarDefinition) {
  std::vector<uint16_t> all16(1 << 16);
  for (std::size_t i = 0; i < all16.size(); ++i) all16[i] = static_cast<uint16_t>(i);
  std::vector<float> f32;
  for (uint32_t hi = 0; hi < (1u << 19); hi += 5) {  // exponent, sign and the top mantissa bits
    for (uint32_t lo : {0x0000u, 0x0001u, 0x0fffu, 0x1000u, 0x1001u, 0x1fffu}) {
      f32.push_back(std::bit_cast<float>((hi << 13) | lo));
    }
  }
  const Tensor wide = from_vector(f32);
  for (CpuIsa isa : isas_up_to_current()) {
    SCOPED_TRACE(cpu_isa_name(isa));
    ScopedMaxCpuIsa cap(isa);
    const Tensor narrow = wide.to(kFloat16);
    const auto* got = static_cast<const uint16_t*>(narrow.data_ptr());
    for (std::size_t i = 0; i < f32.size(); ++i)
      ASSERT_EQ(got[i], Half(f32[i]).bits) << "float bits " << std::bit_cast<uint32_t>(f32[i]);
    Tensor f16 = empty({1 << 16}, kFloat16);
    std::memcpy(f16.data_ptr(), all16.data(), all16.size() * sizeof(uint16_t));
    const std::vector<float> back = f16.to(kFloat32).to_vector<float>();
    for (std::size_t i = 0; i < all16.size(); ++i)
      ASSERT_EQ(std::bit_cast<uint32_t>(back[i]),
                std::bit_cast<uint32_t>(static_cast<float>(Half::from_bits(all16[i]))))
          << i;
    const Tensor mask = ne(from_vector<float>({0, 1, 2, 0, -1}), 0).to(kFloat16);
    EXPECT_EQ(mask.to(kFloat32).to_vector<float>(), (std::vector<float>{0, 1, 1, 0, 1}));
  }
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
