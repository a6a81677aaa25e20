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
