#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "athanor/core/dtype.h"

namespace ath {
namespace {

TEST(DType, PromotionFollowsPyTorch) {
  EXPECT_EQ(promote_types(kInt64, kFloat32), kFloat32);
  EXPECT_EQ(promote_types(kInt32, kInt64), kInt64);
  EXPECT_EQ(promote_types(kUInt8, kInt32), kInt32);
  EXPECT_EQ(promote_types(kBool, kUInt8), kUInt8);
  EXPECT_EQ(promote_types(kBFloat16, kFloat16), kFloat32);
  EXPECT_EQ(promote_types(kFloat16, kFloat64), kFloat64);
  EXPECT_EQ(promote_types(kBFloat16, kInt64), kBFloat16);
  EXPECT_EQ(promote_with_scalar(kInt64, ScalarKind::Floating), kFloat32);
  EXPECT_EQ(promote_with_scalar(kFloat16, ScalarKind::Floating), kFloat16);
  EXPECT_EQ(promote_with_scalar(kBool, ScalarKind::Integral), kInt64);
  EXPECT_EQ(promote_with_scalar(kUInt8, ScalarKind::Integral), kUInt8);
}

TEST(DType, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(BFloat16(1.0f).bits, 0x3f80);
  // 1 + 2^-8 is exactly halfway between two bf16 values: ties to the even one (1.0).
  EXPECT_EQ(BFloat16(1.0f + 1.0f / 256).bits, 0x3f80);
  EXPECT_EQ(BFloat16(1.0f + 3.0f / 256).bits, 0x3f82);
  EXPECT_TRUE(std::isnan(static_cast<float>(BFloat16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(static_cast<float>(BFloat16(-2.5f)), -2.5f);
}

TEST(DType, HalfConvertsLikeIeeeBinary16) {
  EXPECT_EQ(Half(1.0f).bits, 0x3c00);
  EXPECT_EQ(Half(-2.0f).bits, 0xc000);
  EXPECT_EQ(Half(65504.0f).bits, 0x7bff);                // max finite
  EXPECT_EQ(Half(1e6f).bits, 0x7c00);                    // overflow -> inf
  EXPECT_EQ(Half(5.960464477539063e-08f).bits, 0x0001);  // smallest subnormal
  EXPECT_EQ(static_cast<float>(Half::from_bits(0x0001)), 5.960464477539063e-08f);
  EXPECT_EQ(static_cast<float>(Half::from_bits(0x3555)), 0.333251953125f);
  for (uint32_t b = 0; b < 0x7c00; b += 7) {  // every finite positive half round-trips
    Half h = Half::from_bits(static_cast<uint16_t>(b));
    EXPECT_EQ(Half(static_cast<float>(h)).bits, b);
  }
}

// The value of a binary16 pattern with the sign cleared, by float64 arithmetic; 0x7c00 (inf)
// reads as 65536, the step past 65504 that IEEE rounding overflows to.
double half_magnitude(uint32_t bits) {
  const int e = static_cast<int>(bits >> 10);
  const double m = bits & 0x3ffu;
  return e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
}

// IEEE binary16 rounding by float64 arithmetic: the nearest pattern, ties to the even one.
uint16_t half_by_float64(float f) {
  const uint32_t sign = (std::bit_cast<uint32_t>(f) >> 16) & 0x8000u;
  if (std::isnan(f)) return static_cast<uint16_t>(sign | 0x7e00u);  // the quiet NaN
  const double a = std::fabs(static_cast<double>(f));
  uint32_t lo = 0, hi = 0x7c00;  // the largest pattern whose value is <= a
  if (a >= half_magnitude(hi)) return static_cast<uint16_t>(sign | 0x7c00u);
  while (hi - lo > 1) {
    const uint32_t mid = (lo + hi) / 2;
    (half_magnitude(mid) <= a ? lo : hi) = mid;
  }
  const double below = a - half_magnitude(lo), above = half_magnitude(lo + 1) - a;  // exact
  const uint32_t pick = below < above ? lo : above < below ? lo + 1 : (lo % 2 == 0 ? lo : lo + 1);
  return static_cast<uint16_t>(sign | pick);
}

TEST(DType, HalfMatchesFloat64Arithmetic) {
  for (uint32_t b = 0; b < (1u << 16); ++b) {  // every pattern widens to its exact value
    const float f = static_cast<float>(Half::from_bits(static_cast<uint16_t>(b)));
    const double m = half_magnitude(b & 0x7fffu);
    if ((b & 0x7c00u) == 0x7c00u && (b & 0x3ffu) != 0) {
      EXPECT_TRUE(std::isnan(f)) << b;
    } else {
      EXPECT_EQ(static_cast<double>(f),
                (b & 0x8000u) ? -(b == 0xfc00u ? INFINITY : m) : (b == 0x7c00u ? INFINITY : m))
          << b;
      EXPECT_EQ(std::signbit(f), (b & 0x8000u) != 0) << b;
    }
  }
  // Narrowing, over float patterns around every half rounding boundary: each top-19-bit prefix
  // (sign, exponent, the mantissa bits half keeps) with low bits below, at and above the tie.
  for (uint32_t hi = 0; hi < (1u << 19); hi += 3) {
    for (uint32_t lo : {0x0000u, 0x0001u, 0x0fffu, 0x1000u, 0x1001u, 0x1fffu}) {
      const float f = std::bit_cast<float>((hi << 13) | lo);
      ASSERT_EQ(Half(f).bits, half_by_float64(f)) << "float bits " << ((hi << 13) | lo);
    }
  }
}

TEST(DType, NamesAndSizes) {
  EXPECT_EQ(dtype_name(kBFloat16), "bfloat16");
  EXPECT_EQ(element_size(kInt64), 8u);
  EXPECT_EQ(element_size(kBool), 1u);
  EXPECT_TRUE(is_floating(kFloat16));
  EXPECT_FALSE(is_floating(kInt32));
}

}  // namespace
}  // namespace ath
