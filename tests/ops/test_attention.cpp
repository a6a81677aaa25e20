// scaled_dot_product_attention against a naive float64 loop reference and against PyTorch's
// explicit softmax(q k^T / sqrt(d) + mask) v (goldens, with gradients), with causal, bool and
// additive masks; gradients by gradcheck; bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "athanor/athanor.h"
#include "support/golden.h"
#include "support/module_golden.h"

namespace ath {
namespace {

// q [B, L, E], k [B, S, E], v [B, S, F]; mask(b, i, j) returns an additive term (-inf = drop).
Tensor reference(const Tensor& q, const Tensor& k, const Tensor& v,
                 const std::function<double(int64_t, int64_t, int64_t)>& mask) {
  const int64_t B = q.size(0), L = q.size(1), E = q.size(2), S = k.size(1), F = v.size(2);
  auto qv = q.to_vector<double>(), kv = k.to_vector<double>(), vv = v.to_vector<double>();
  std::vector<double> out(static_cast<std::size_t>(B * L * F), 0.0);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t i = 0; i < L; ++i) {
      std::vector<double> w(static_cast<std::size_t>(S));
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < S; ++j) {
        double dot = 0;
        for (int64_t e = 0; e < E; ++e) dot += qv[(b * L + i) * E + e] * kv[(b * S + j) * E + e];
        w[j] = dot / std::sqrt(double(E)) + mask(b, i, j);
        mx = std::max(mx, w[j]);
      }
      double z = 0;
      for (auto& x : w) z += (x = std::exp(x - mx));
      for (int64_t j = 0; j < S; ++j) {
        for (int64_t f = 0; f < F; ++f)
          out[(b * L + i) * F + f] += w[j] / z * vv[(b * S + j) * F + f];
      }
    }
  }
  return from_vector(out, Shape{B, L, F});
}

struct Inputs {
  Tensor q, k, v;
};
Inputs make(DType t) {
  manual_seed(3);
  return {randn({2, 4, 3}).to(t), randn({2, 5, 3}).to(t), randn({2, 5, 2}).to(t)};
}

TEST(Attention, PlainCausalBoolAndAdditiveMasks) {
  Inputs x = make(kFloat32);
  testing::expect_close(scaled_dot_product_attention(x.q, x.k, x.v),
                        reference(x.q, x.k, x.v, [](auto, auto, auto) { return 0.0; }), 1e-5, 1e-6,
                        "plain");
  const double inf = std::numeric_limits<double>::infinity();
  testing::expect_close(
      scaled_dot_product_attention(x.q, x.k, x.v, {.is_causal = true}),
      reference(x.q, x.k, x.v, [&](auto, auto i, auto j) { return j <= i ? 0.0 : -inf; }), 1e-5,
      1e-6, "causal");
  // Bool padding mask [B, 1, S]: batch 1 ignores its last two keys.
  Tensor keep = ones({2, 1, 5}, kBool);
  keep.select(0, 1).narrow(1, 3, 2).fill_(false);
  testing::expect_close(
      scaled_dot_product_attention(x.q, x.k, x.v, {.mask = keep}),
      reference(x.q, x.k, x.v, [&](auto b, auto, auto j) { return b == 1 && j >= 3 ? -inf : 0.0; }),
      1e-5, 1e-6, "bool mask");
  Tensor bias = randn({4, 5});
  auto bv = bias.to_vector<double>();
  testing::expect_close(
      scaled_dot_product_attention(x.q, x.k, x.v, {.mask = bias}),
      reference(x.q, x.k, x.v, [&](auto, auto i, auto j) { return bv[i * 5 + j]; }), 1e-5, 1e-6,
      "additive mask");
}

// Cases written by tools/golden/transformer.py: q [2, 2, 4, 6], k [2, 2, 5, 6], v [2, 2, 5, 3];
// the bool mask [2, 1, 4, 5] keeps where true, the additive one [4, 5] is added.
TEST(Attention, MatchesPyTorchMath) {
  nn::Module none("ScaledDotProductAttention");  // no parameters: check_module_golden's holder
  for (const testing::GoldenCase& c : testing::load_golden("transformer")) {
    if (c.name.rfind("sdpa_", 0) != 0) continue;
    AttentionOptions o{.is_causal = c.name == "sdpa_causal"};
    testing::check_module_golden(c, none, [&](const std::vector<Tensor>& in) {
      AttentionOptions with = o;
      if (in.size() == 4) with.mask = in[3];
      return std::vector<Tensor>{scaled_dot_product_attention(in[0], in[1], in[2], with)};
    });
  }
}

TEST(Attention, GradientsMatchFiniteDifferences) {
  Inputs x = make(kFloat64);
  x.q.requires_grad_();
  x.k.requires_grad_();
  x.v.requires_grad_();
  auto r = gradcheck(
      [](const std::vector<Tensor>& in) {
        return std::vector{scaled_dot_product_attention(in[0], in[1], in[2], {.is_causal = true})};
      },
      {x.q, x.k, x.v});
  EXPECT_TRUE(r.ok) << r.message;
}

TEST(Attention, BadInputNamesTheFunction) {
  Inputs x = make(kFloat32);
  for (auto call : std::vector<std::function<void()>>{
           [&] {
             scaled_dot_product_attention(x.q, randn({2, 5, 4}), x.v);
           },  // E mismatch
           [&] {
             scaled_dot_product_attention(x.q, x.k, randn({2, 6, 2}));
           },  // S mismatch
           [&] {
             scaled_dot_product_attention(x.q, x.k, x.v, {.mask = ones({4, 5}), .is_causal = true});
           },
           [&] {
             scaled_dot_product_attention(x.q, x.k, x.v, {.mask = ones({3, 7})});
           },  // bad mask shape
       }) {
    try {
      call();
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("scaled_dot_product_attention"), std::string::npos)
          << e.what();
    }
  }
}

// merge_heads reads a part whose head dimension is strided (a transposed matrix-product result,
// as in the backward) in tiles of up to 16 rows: lengths that leave short tiles, both layouts,
// and float64, against the same merge from contiguous copies.
TEST(MergeHeads, TransposedPartsInTilesEqualTheContiguousMerge) {
  for (const bool batch_first : {true, false}) {
    for (const int64_t len : {1, 16, 37}) {
      for (const DType dtype : {kFloat32, kFloat64}) {
        // Parts [B, heads, L, d] as transposes of [B, heads, d, L].
        std::vector<Tensor> parts, dense;
        for (int p = 0; p < 3; ++p) {
          parts.push_back(randn({3, 2, 5, len}).to(dtype).transpose(2, 3));
          dense.push_back(parts.back().contiguous());
        }
        ASSERT_EQ(parts[0].stride(2), 1);
        const Tensor got = merge_heads(parts, batch_first), want = merge_heads(dense, batch_first);
        EXPECT_TRUE(equal(got, want)) << "batch_first " << batch_first << " len " << len;
      }
    }
  }
}

}  // namespace
}  // namespace ath
