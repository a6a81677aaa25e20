#include <gtest/gtest.h>

#include <cmath>
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

TEST(DType, NamesAndSizes) {
  EXPECT_EQ(dtype_name(kBFloat16), "bfloat16");
  EXPECT_EQ(element_size(kInt64), 8u);
  EXPECT_EQ(element_size(kBool), 1u);
  EXPECT_TRUE(is_floating(kFloat16));
  EXPECT_FALSE(is_floating(kInt32));
}

}  // namespace
}  // namespace ath
