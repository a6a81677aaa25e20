#include <gtest/gtest.h>

#include <atomic>

#include "athanor/core/parallel.h"
#include "athanor/core/shape.h"

namespace ath {
namespace {

TEST(Shape, BroadcastAndErrors) {
  EXPECT_EQ(broadcast_shapes(Shape{4, 1}, Shape{3}), (Shape{4, 3}));
  EXPECT_EQ(broadcast_shapes(Shape{}, Shape{2, 2}), (Shape{2, 2}));
  EXPECT_EQ(broadcast_shapes(Shape{0, 1}, Shape{1, 5}), (Shape{0, 5}));
  EXPECT_THROW(broadcast_shapes(Shape{2, 3}, Shape{4}), ShapeError);
  try {
    broadcast_shapes(Shape{2, 3}, Shape{4});
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("[2, 3]"), std::string::npos) << e.what();
  }
}

TEST(Shape, NormalizeDims) {
  EXPECT_EQ(normalize_dim(-1, 3), 2);
  EXPECT_EQ(normalize_dim(0, 0), 0);  // a scalar accepts dim 0 and -1
  EXPECT_THROW(normalize_dim(3, 3), IndexError);
  EXPECT_THROW(normalize_dims(DimList{0, -3}, 3), IndexError);  // repeated
  EXPECT_EQ(contiguous_strides(Shape{2, 3, 4}), (Strides{12, 4, 1}));
}

// A shape whose size int64 cannot count is a ShapeError, also when a zero dim makes numel 0
// (the strides still hold the product of the others).
TEST(Shape, ElementCountsPastInt64AreShapeErrors) {
  const int64_t big = int64_t{1} << 32;
  EXPECT_EQ(numel(Shape{0, 3, 4}), 0);
  EXPECT_EQ(numel(Shape{big, big / 2 - 1}), big * (big / 2 - 1));
  EXPECT_THROW(numel(Shape{big, big}), ShapeError);
  EXPECT_THROW(numel(Shape{big, big, 0}), ShapeError);
  EXPECT_THROW(contiguous_strides(Shape{0, big, big}), ShapeError);
  EXPECT_EQ(contiguous_strides(Shape{0, 2, 3}), (Strides{6, 3, 1}));
}

TEST(Shape, SmallVecRejectsTooManyDims) {
  Shape s;
  for (std::size_t i = 0; i < kMaxDims; ++i) s.push_back(1);
  EXPECT_THROW(s.push_back(1), ShapeError);
}

TEST(Parallel, CoversRangeExactlyOnceAndPropagatesErrors) {
  int prev = get_num_threads();
  set_num_threads(2);
  std::vector<std::atomic<int>> hits(100000);
  parallel_for(0, 100000, 1000, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) hits[i]++;
  });
  for (auto& h : hits) ASSERT_EQ(h.load(), 1);
  EXPECT_THROW(parallel_for(0, 100000, 10, [](int64_t, int64_t) { throw ValueError("boom"); }),
               ValueError);
  EXPECT_THROW(set_num_threads(0), ValueError);
  set_num_threads(prev);
}

}  // namespace
}  // namespace ath
