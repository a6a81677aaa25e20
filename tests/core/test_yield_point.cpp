// Cooperative yield points: requests count while they live, and moves transfer them.
#include <gtest/gtest.h>

#include <utility>

#include "athanor/core/yield_point.h"

namespace ath {
namespace {

TEST(YieldPoint, RequestsCountWhileTheyLive) {
  EXPECT_FALSE(yields_requested());
  {
    YieldRequest a;
    EXPECT_TRUE(yields_requested());
    {
      YieldRequest b;
      YieldRequest moved(std::move(b));  // b no longer counts; moved does
    }
    EXPECT_TRUE(yields_requested());
    YieldRequest c;
    c = std::move(a);  // c's own request ends, a's passes to c
    EXPECT_TRUE(yields_requested());
  }
  EXPECT_FALSE(yields_requested());
  yield_point();  // no request: returns at once
}

}  // namespace
}  // namespace ath
