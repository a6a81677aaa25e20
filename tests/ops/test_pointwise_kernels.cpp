// Pointwise kernels at the edges the op table does not reach: integer corner cases that trap in
// C++ (INT_MIN % -1, division by zero), large tensors that take the threaded and vectorized
// paths with strided and broadcast operands, and NaN conventions.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "athanor/athanor.h"

namespace ath {
namespace {

template <class T>
std::vector<T> vec(const Tensor& t) {
  return t.to_vector<T>();
}

TEST(PointwiseKernels, IntegerModuloByMinusOneDoesNotTrap) {
  constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min();
  constexpr int32_t kMin32 = std::numeric_limits<int32_t>::min();
  Tensor a64 = from_vector<int64_t>({kMin64, 7, -7});
  EXPECT_EQ(vec<int64_t>(fmod(a64, -1)), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(vec<int64_t>(remainder(a64, -1)), (std::vector<int64_t>{0, 0, 0}));
  Tensor a32 = from_vector<int32_t>({kMin32, 5});
  EXPECT_EQ(vec<int32_t>(remainder(a32, from_vector<int32_t>({-1, -1}))),
            (std::vector<int32_t>{0, 0}));
  EXPECT_EQ(vec<int64_t>(abs(a64)), (std::vector<int64_t>{kMin64, 7, 7}));  // wraps, as torch
}

TEST(PointwiseKernels, IntegerModuloByZeroThrowsValueError) {
  Tensor a = from_vector<int32_t>({1, 2, 3});
  for (auto* fn : {+[](const Tensor&x, const Tensor&y) { return fmod(x, y); },
                   +[](const Tensor&x, const Tensor&y) { return remainder(x, y); }}) {
    try {
      fn(a, from_vector<int32_t>({1, 0, 1}));
      ADD_FAILURE() << "no error";
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("ZeroDivisionError"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(remainder(from_vector<uint8_t>({4}), 0), ValueError);
  // Floats follow IEEE instead: NaN.
  EXPECT_TRUE(std::isnan(fmod(from_vector<float>({1}), 0.0).item<float>()));
}

TEST(PointwiseKernels, IntegerPowWrapsAndHandlesNegativeExponents) {
  Tensor b = from_vector<int64_t>({2, -2, 1, -1, 0, 3});
  Tensor e = from_vector<int64_t>({63, 3, -5, -3, -2, 0});
  EXPECT_EQ(vec<int64_t>(pow(b, e)),
            (std::vector<int64_t>{std::numeric_limits<int64_t>::min(), -8, 1, -1, 0, 1}));
  EXPECT_EQ(vec<uint8_t>(pow(from_vector<uint8_t>({2, 3}), 8)), (std::vector<uint8_t>{0, 161}));
  EXPECT_EQ(vec<uint8_t>(neg(from_vector<uint8_t>({1, 0}))), (std::vector<uint8_t>{255, 0}));
  // The largest exponent an uint8 holds computes (wrapping); a larger one is refused, as torch.
  EXPECT_EQ(vec<uint8_t>(pow(from_vector<uint8_t>({3}), 255)), (std::vector<uint8_t>{171}));
  EXPECT_THROW(pow(from_vector<uint8_t>({3}), 256), ValueError);
  EXPECT_THROW(pow(from_vector<int32_t>({3}), int64_t{1} << 40), ValueError);
  constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(vec<int64_t>(neg(from_vector<int64_t>({kMin64}))), (std::vector<int64_t>{kMin64}));
}

// Big enough for several threads and the vectorized rows; the operands are a transposed view,
// a broadcast row and a 0-dim scalar. Checked element by element against std:: math in float.
TEST(PointwiseKernels, LargeStridedAndBroadcastOperands) {
  const int64_t n = 257, m = 301;
  std::vector<float> v(static_cast<std::size_t>(n * m)), r(static_cast<std::size_t>(m));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.37f * float(i)) * 3;
  for (std::size_t j = 0; j < r.size(); ++j) r[j] = std::cos(0.11f * float(j));
  Tensor x = from_vector(v, Shape{m, n}).t();  // [n, m], strides (1, n)
  Tensor row = from_vector(r, Shape{m});
  Tensor y = maximum(x, row);
  Tensor z = lerp(x.contiguous(), row.expand({n, m}).contiguous(), 0.25);
  Tensor s = gelu(x);
  Tensor c = clamp(x, -1.0, 2.0);
  Tensor g = gt(x, scalar_tensor(0.5f));
  auto yv = vec<float>(y), zv = vec<float>(z), sv = vec<float>(s), cv = vec<float>(c);
  auto gv = vec<bool>(g);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < m; ++j) {
      const float xv = v[static_cast<std::size_t>(j * n + i)], rv = r[static_cast<std::size_t>(j)];
      const auto k = static_cast<std::size_t>(i * m + j);
      ASSERT_EQ(yv[k], std::max(xv, rv)) << i << "," << j;
      ASSERT_NEAR(zv[k], xv + 0.25f * (rv - xv), 1e-6);
      ASSERT_NEAR(sv[k], 0.5f * xv * (1 + std::erf(xv / std::sqrt(2.0f))), 1e-6);
      ASSERT_EQ(cv[k], std::min(std::max(xv, -1.0f), 2.0f));
      ASSERT_EQ(gv[k], xv > 0.5f);
    }
  }
}

TEST(PointwiseKernels, NaNConventions) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = from_vector<float>({nan, 1});
  // clamp propagates a NaN input and ignores a NaN bound (torch 1.13).
  auto c = vec<float>(clamp(x, 0.0, 0.5));
  EXPECT_TRUE(std::isnan(c[0]));
  EXPECT_EQ(c[1], 0.5f);
  EXPECT_EQ(vec<float>(clamp_min(from_vector<float>({1, 2}), double(nan))),
            (std::vector<float>{1, 2}));
  // relu, hardtanh, maximum and minimum propagate NaN.
  EXPECT_TRUE(std::isnan(vec<float>(relu(x))[0]));
  EXPECT_TRUE(std::isnan(vec<float>(hardtanh(x))[0]));
  EXPECT_TRUE(
      std::isnan(vec<float>(maximum(from_vector<float>({1}), from_vector<float>({nan})))[0]));
  EXPECT_TRUE(
      std::isnan(vec<float>(minimum(from_vector<float>({nan}), from_vector<float>({1})))[0]));
  // NaN is truthy for logical ops; sign(NaN) is 0.
  EXPECT_EQ(vec<bool>(logical_and(x, x)), (std::vector<bool>{true, true}));
  EXPECT_EQ(vec<float>(sign(x)), (std::vector<float>{0, 1}));
}

TEST(PointwiseKernels, RoundIsHalfToEvenAtEveryMagnitude) {
  Tensor x = from_vector<double>({0.5, 1.5, 2.5, -2.5, 1e15 + 0.5, 4503599627370497.0});
  EXPECT_EQ(vec<double>(round(x)), (std::vector<double>{0, 2, 2, -2, 1e15, 4503599627370497.0}));
  Tensor h = from_vector<float>({0.5f, 1.5f, 2.5f}).to(kBFloat16);
  EXPECT_EQ(vec<float>(round(h)), (std::vector<float>{0, 2, 2}));
}

}  // namespace
}  // namespace ath
