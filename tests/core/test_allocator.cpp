#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <string>
#include <vector>

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

namespace {
int64_t bin_bytes(int64_t floats) {
  return static_cast<int64_t>(detail::allocation_bin_size(static_cast<std::size_t>(floats) * 4));
}
}  // namespace

// Under a PeakBoundedCache a freed block is still reused for its size, but a miss first hands
// back cached blocks of other sizes, so live + cached never pass the peak of live bytes.
TEST(Allocator, PeakBoundedCacheReusesButNeverHoldsMoreThanThePeak) {
  empty_cache();
  const int64_t base = memory_stats().current_bytes;
  PeakBoundedCache bounded;
  { Tensor a = empty({1 << 20}, kFloat32); }  // 4 MB: the peak, then cached
  EXPECT_EQ(memory_stats().cached_bytes, bin_bytes(1 << 20));
  void* p = nullptr;
  {
    Tensor b = empty({1 << 19}, kFloat32);  // 2 MB, a miss: 4 + 2 cached + live > the 4 MB peak
    p = b.data_ptr();
    EXPECT_EQ(memory_stats().cached_bytes, 0);
  }
  const int64_t hits = memory_stats().cache_hits;
  {
    Tensor again = empty({1 << 19}, kFloat32);  // the same size: a hit
    EXPECT_EQ(again.data_ptr(), p);
  }
  EXPECT_EQ(memory_stats().cache_hits, hits + 1);
  {
    Tensor c = empty({3 << 18}, kFloat32);  // 3 MB, a miss: 2 cached + 3 live > the 4 MB peak
    EXPECT_LE(memory_stats().current_bytes + memory_stats().cached_bytes - base,
              bin_bytes(1 << 20));
  }
  empty_cache();
}

// The same sequence without the bound keeps a block of every size it saw.
TEST(Allocator, WithoutABoundTheCacheKeepsEverySize) {
  empty_cache();
  { Tensor a = empty({1 << 20}, kFloat32); }
  { Tensor b = empty({1 << 19}, kFloat32); }
  EXPECT_EQ(memory_stats().cached_bytes, bin_bytes(1 << 20) + bin_bytes(1 << 19));
  empty_cache();
}

// Random lifetimes and sizes (256 KiB to 8 MB): after every allocation, the bytes the allocator
// holds (live + cached) are at most the peak of live bytes since the bound began.
TEST(Allocator, PeakBoundedCacheHoldsAtMostThePeakOverRandomLifetimes) {
  for (unsigned seed = 0; seed < 5; ++seed) {
    empty_cache();
    const int64_t base = memory_stats().current_bytes;
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int64_t> floats(1 << 16, 1 << 21);
    std::vector<Tensor> live;
    int64_t peak = 0;
    const int64_t hits_before = memory_stats().cache_hits;
    PeakBoundedCache bounded;
    for (int i = 0; i < 300; ++i) {
      if (!live.empty() && rng() % 3 == 0) live.erase(live.begin() + rng() % live.size());
      live.push_back(empty({floats(rng)}, kFloat32));
      const MemoryStats m = memory_stats();
      peak = std::max(peak, m.current_bytes - base);
      ASSERT_LE(m.current_bytes + m.cached_bytes - base, peak) << "seed " << seed << " step " << i;
    }
    live.clear();
    // ...and still serves repeated sizes (this seed's own hits, not the process's count).
    EXPECT_GT(memory_stats().cache_hits, hits_before) << "seed " << seed;
  }
  empty_cache();
}

// Under a sanitizer the large blocks stay with malloc (allocator.cpp), which may keep them.
#if defined(__SANITIZE_ADDRESS__)
#define ATH_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ATH_TEST_SANITIZED 1
#endif
#endif
#if !defined(ATH_TEST_SANITIZED)
double rss_mb() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return -1;
}

// Large blocks are mapped from the OS, so handing them back lowers the RSS at once (through
// malloc, glibc could keep them in its heap).
TEST(Allocator, EmptyCacheLowersTheResidentSet) {
  empty_cache();
  std::vector<Tensor> blocks;
  for (int i = 0; i < 16; ++i) blocks.push_back(full({1 << 20}, 1.0));  // 16 x 4 MB, touched
  const double with = rss_mb();
  if (with < 0) GTEST_SKIP() << "no /proc/self/status";
  blocks.clear();
  empty_cache();
  EXPECT_LT(rss_mb(), with - 48);
}
#endif

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
