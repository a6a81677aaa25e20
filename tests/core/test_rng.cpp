#include <gtest/gtest.h>

#include "athanor/core/rng.h"

namespace ath {
namespace {

// Known-answer vectors from Random123 (kat_vectors, philox4x32 with 10 rounds).
TEST(Philox, MatchesRandom123KnownAnswers) {
  auto zero = philox4x32_10({0, 0, 0, 0}, {0, 0});
  EXPECT_EQ(zero, (std::array<uint32_t, 4>{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  auto ones = philox4x32_10({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
                            {0xffffffffu, 0xffffffffu});
  EXPECT_EQ(ones, (std::array<uint32_t, 4>{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
  auto pi = philox4x32_10({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
                          {0xa4093822u, 0x299f31d0u});
  EXPECT_EQ(pi, (std::array<uint32_t, 4>{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
}

TEST(Philox, GeneratorReservesDisjointCounters) {
  Generator g(7);
  uint64_t a = g.reserve(10);  // 3 blocks
  uint64_t b = g.reserve(1);
  EXPECT_EQ(a, 0u);
  EXPECT_EQ(b, 3u);
  g.manual_seed(7);
  EXPECT_EQ(g.offset(), 0u);
}

TEST(Philox, UniformIsInUnitIntervalAndDeterministic) {
  double sum = 0;
  for (uint64_t i = 0; i < 10000; ++i) {
    float u = philox_uniform(42, 0, i);
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    ASSERT_EQ(u, philox_uniform(42, 0, i));
    sum += u;
  }
  EXPECT_NEAR(sum / 10000, 0.5, 0.02);
  double m = 0, v = 0;
  for (uint64_t i = 0; i < 10000; ++i) {
    double z = philox_normal(42, 0, i);
    m += z;
    v += z * z;
  }
  EXPECT_NEAR(m / 10000, 0.0, 0.05);
  EXPECT_NEAR(v / 10000, 1.0, 0.05);
}

}  // namespace
}  // namespace ath
