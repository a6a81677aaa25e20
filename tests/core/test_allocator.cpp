#include <gtest/gtest.h>

#include "athanor/athanor.h"

namespace ath {
namespace {

TEST(Allocator, BlocksAreAlignedAndReused) {
  empty_cache();
  MemoryStats before = memory_stats();
  void* p = nullptr;
  {
    Tensor t = empty({1000}, kFloat32);
    p = t.data_ptr();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
    EXPECT_GT(memory_stats().current_bytes, before.current_bytes);
  }
  EXPECT_EQ(memory_stats().current_bytes, before.current_bytes);
  int64_t hits = memory_stats().cache_hits;
  Tensor again = empty({1000}, kFloat32);
  EXPECT_EQ(again.data_ptr(), p);  // the same block comes back
  EXPECT_EQ(memory_stats().cache_hits, hits + 1);
}

TEST(Allocator, PeakTracksMaximumAndResets) {
  reset_peak_memory_stats();
  int64_t base = memory_stats().current_bytes;
  { Tensor big = empty({1 << 20}, kFloat32); }
  MemoryStats s = memory_stats();
  EXPECT_GE(s.peak_bytes, base + (4 << 20));
  reset_peak_memory_stats();
  EXPECT_EQ(memory_stats().peak_bytes, memory_stats().current_bytes);
}

TEST(Allocator, EmptyCacheReleasesFreeBlocks) {
  { Tensor t = empty({4096}, kFloat64); }
  EXPECT_GT(memory_stats().cached_bytes, 0);
  empty_cache();
  EXPECT_EQ(memory_stats().cached_bytes, 0);
}

// Large blocks (> 16 MB) are reused while a loop repeats its sizes, and a size the cache cannot
// serve first hands the cached large blocks back, so they never add to peak RSS.
TEST(Allocator, LargeBlocksAreReusedAndReleasedOnAMiss) {
  empty_cache();
  const int64_t big = int64_t{6} << 20;  // 24 MB of float32
  void* p = nullptr;
  {
    Tensor t = empty({big}, kFloat32);
    p = t.data_ptr();
  }
  EXPECT_GE(memory_stats().cached_bytes, big * 4);
  int64_t system_before = memory_stats().system_allocations;
  {
    Tensor same = empty({big}, kFloat32);
    EXPECT_EQ(same.data_ptr(), p);  // a hit: no fresh pages to fault in
  }
  EXPECT_EQ(memory_stats().system_allocations, system_before);
  auto bin = [](int64_t floats) {
    return static_cast<int64_t>(detail::allocation_bin_size(static_cast<std::size_t>(floats) * 4));
  };
  {
    Tensor other = empty({big * 2}, kFloat32);  // a miss: the cached 24 MB block goes first
    EXPECT_EQ(memory_stats().cached_bytes, 0);
  }
  EXPECT_EQ(memory_stats().cached_bytes, bin(big * 2));
  // Any miss, small ones too, goes to the OS only after the large cache is empty.
  { Tensor small = empty({12345}, kFloat32); }
  EXPECT_EQ(memory_stats().cached_bytes, bin(12345));
  empty_cache();
}

TEST(Allocator, BinSizesBoundSlack) {
  for (std::size_t n : {1ul, 63ul, 64ul, 1000ul, 1025ul, 5000ul, 1ul << 20, (1ul << 20) + 1}) {
    std::size_t b = detail::allocation_bin_size(n);
    EXPECT_GE(b, n);
    EXPECT_EQ(b % 64, 0u);
    EXPECT_LE(b, std::max<std::size_t>(64, n + n / 8 + 64));
  }
}

}  // namespace
}  // namespace ath
