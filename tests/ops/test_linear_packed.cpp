// The packed inference linear (linear_packed.h) against linear in float64: one row (a batch-1
// classifier), many rows, 3-D inputs, with and without bias, relu, gelu or a residual, on both
// kernels (the direct loop of products up to 16K multiply-adds: W2's 1 x 128 x 10 head, 4 x 64 x
// 64 at the limit, 5 x 3; oneDNN's matmul above); bad inputs.
#include <athanor/athanor.h>
#include <athanor/ops/linear_packed.h>
#include <gtest/gtest.h>

#include "support/op_table.h"

namespace ath {
namespace {

Tensor f64(const Tensor& t) { return t.to(kFloat64); }

// Float32-only inference kernels: their op-table rows are the tests below, against float64
// linear.
const testing::CoveredElsewhere covered[] = {{"linear_pack_weight", "test_linear_packed.cpp"},
                                             {"linear_packed", "test_linear_packed.cpp"}};

TEST(LinearPacked, MatchesLinearForEveryShapeAndEpilogue) {
  manual_seed(5);
  const Shape inputs[] = {{1, 3136}, {64, 100}, {2, 7, 33}, {5}, {1, 128}, {4, 64}, {4, 65}};
  const int64_t outs[] = {128, 10, 48, 3, 10, 64, 64};
  for (std::size_t i = 0; i < std::size(inputs); ++i) {
    for (int variant = 0; variant < 6; ++variant) {
      const bool bias = variant != 1, relu = variant == 2 || variant == 5, gelu = variant == 3;
      const bool residual = variant >= 4;
      const Tensor x = randn(inputs[i]);
      const int64_t k = inputs[i].back(), n = outs[i];
      const Tensor w = randn({n, k}), b = randn({n});
      const LinearPackedAttrs a{.rows = x.numel() / k,
                                .in_features = k,
                                .out_features = n,
                                .with_bias = bias,
                                .relu = relu,
                                .gelu = gelu,
                                .residual = residual};
      Tensor want = linear(f64(x), f64(w), bias ? std::optional<Tensor>(f64(b)) : std::nullopt);
      // The residual as a flat tensor: read in the output's row-major order.
      const Tensor r = randn({want.numel()});
      if (residual) want = want + f64(r).reshape(want.shape());
      if (relu) want = ath::relu(want);
      if (gelu) want = ath::gelu(want);  // float64: the exact erf
      const Tensor got =
          linear_packed(x, linear_pack_weight(w, a), bias ? std::optional<Tensor>(b) : std::nullopt,
                        a, residual ? std::optional<Tensor>(r) : std::nullopt);
      ASSERT_EQ(got.shape(), want.shape());
      const double scale = std::max(1.0, max(abs(want)).item<double>());
      EXPECT_LE(max(abs(f64(got) - want)).item<double>(), 1e-5 * scale * std::sqrt(double(k)))
          << "input " << to_string(inputs[i]) << " variant " << variant;
    }
  }
}

TEST(LinearPacked, BadInputsAreClearErrors) {
  const LinearPackedAttrs a{.rows = 2, .in_features = 4, .out_features = 3};
  EXPECT_THROW(linear_pack_weight(randn({4, 3}), a), ShapeError);  // [K, N] given for [N, K]
  const Tensor packed = linear_pack_weight(randn({3, 4}), a);
  EXPECT_THROW(linear_packed(randn({3, 4}), packed, std::nullopt, a), ShapeError);  // rows
  EXPECT_THROW(linear_packed(randn({2, 4}), randn({4}), std::nullopt, a), ShapeError);
  EXPECT_THROW(linear_packed(randn({2, 5}), packed, std::nullopt, a), ShapeError);
  // Another shape whose packed weight has the same size: the header tells them apart.
  LinearPackedAttrs wide = a;
  wide.out_features = 4;
  EXPECT_THROW(
      linear_packed(randn({2, 4}), linear_pack_weight(randn({3, 4}), a), std::nullopt, wide),
      Error);
  EXPECT_THROW(linear_packed(randn({2, 4}).to(kFloat64), packed, std::nullopt, a), DTypeError);
  EXPECT_THROW(linear_pack_weight(randn({3, 4}), LinearPackedAttrs{}), ValueError);
  LinearPackedAttrs with_residual = a;
  with_residual.residual = true;
  const Tensor packed_r = linear_pack_weight(randn({3, 4}), with_residual);
  EXPECT_THROW(linear_packed(randn({2, 4}), packed_r, std::nullopt, with_residual, randn({2, 4})),
               ShapeError);  // 8 elements for a [2, 3] product
  EXPECT_THROW(linear_packed(randn({2, 4}), packed_r, std::nullopt, with_residual),
               ValueError);  // no residual given
  LinearPackedAttrs both = a;
  both.relu = both.gelu = true;
  EXPECT_THROW(linear_pack_weight(randn({3, 4}), both), ValueError);
}

}  // namespace
}  // namespace ath
