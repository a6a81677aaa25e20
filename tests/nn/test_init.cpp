#include <gtest/gtest.h>

#include <cmath>

#include "athanor/athanor.h"
#include "athanor/nn/init.h"

namespace ath::nn::init {
namespace {

TEST(Init, GainsAreTorchs) {
  EXPECT_DOUBLE_EQ(calculate_gain("relu"), std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(calculate_gain("tanh"), 5.0 / 3.0);
  EXPECT_DOUBLE_EQ(calculate_gain("leaky_relu", 0.2), std::sqrt(2.0 / 1.04));
  EXPECT_DOUBLE_EQ(calculate_gain("selu"), 0.75);
  EXPECT_DOUBLE_EQ(calculate_gain("conv2d"), 1.0);
  EXPECT_THROW(calculate_gain("swish"), ValueError);
  EXPECT_EQ(fan_in_and_fan_out(empty({8, 3, 5, 5})), (std::pair<int64_t, int64_t>{75, 200}));
  EXPECT_THROW(fan_in_and_fan_out(empty({8})), ShapeError);
}

TEST(Init, DistributionsHaveTheRightMoments) {
  manual_seed(11);
  Tensor t = empty({200, 300});
  xavier_uniform_(t);
  const double b = std::sqrt(6.0 / 500);
  EXPECT_LE(max(t.abs()).item<double>(), b);
  EXPECT_NEAR(t.pow(2).mean().item<double>(), b * b / 3, 0.03 * b * b);
  kaiming_normal_(t, {.mode = FanMode::FanOut, .nonlinearity = "relu"});
  EXPECT_NEAR(t.pow(2).mean().item<double>(), 2.0 / 200, 0.03 * 2.0 / 200);
  EXPECT_NEAR(t.mean().item<double>(), 0.0, 0.003);
  normal_(t, 3.0, 0.5);
  EXPECT_NEAR(t.mean().item<double>(), 3.0, 0.01);
  trunc_normal_(t, 0.0, 1.0, -0.5, 1.0);
  EXPECT_GE(min(t).item<double>(), -0.5);
  EXPECT_LE(max(t).item<double>(), 1.0);
  // Truncated N(0,1) on [-0.5, 1] has mean (phi(-0.5) - phi(1)) / (Phi(1) - Phi(-0.5)).
  auto phi = [](double x) { return std::exp(-x * x / 2) / std::sqrt(2 * M_PI); };
  auto Phi = [](double x) { return 0.5 * (1 + std::erf(x / std::sqrt(2.0))); };
  EXPECT_NEAR(t.mean().item<double>(), (phi(-0.5) - phi(1)) / (Phi(1) - Phi(-0.5)), 0.01);
  constant_(t, 2.5);
  EXPECT_EQ(min(t).item<double>(), 2.5);
  EXPECT_THROW(uniform_(empty({2}, kInt64)), DTypeError);
  EXPECT_THROW(normal_(t, 0, -1), ValueError);
}

TEST(Init, OrthogonalIsOrthonormalBothOrientations) {
  for (Shape s : {Shape{6, 4}, Shape{4, 6}, Shape{3, 2, 2}}) {
    Tensor t = empty(s, kFloat64);
    orthogonal_(t, 2.0);
    Tensor m = t.reshape({s[0], -1});
    Tensor g = m.size(0) >= m.size(1) ? matmul(m.t(), m) : matmul(m, m.t());
    const int64_t n = g.size(0);
    Tensor diff = (g - eye(n, {}, kFloat64) * 4.0).abs();
    EXPECT_LT(max(diff).item<double>(), 1e-10) << to_string(s);
  }
}

TEST(Init, DoesNotRecordHistory) {
  Tensor w = ones({3, 3}).requires_grad_();
  uniform_(w, -1, 1);
  EXPECT_TRUE(w.is_leaf());
  EXPECT_EQ(w.grad_fn(), nullptr);
}

}  // namespace
}  // namespace ath::nn::init
