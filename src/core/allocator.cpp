// Size-binned free lists behind one mutex. A mutex (not thread-local caches) keeps peak memory
// honest and blocks reusable across threads; data-loader workers allocate too, and the cost of
// an uncontended lock (~20 ns) is small next to an op's dispatch.
#include "athanor/core/allocator.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <array>
#include <atomic>
#include <bit>
#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "athanor/core/error.h"

namespace ath {

namespace {

constexpr std::size_t kAlignment = 64;
// Blocks larger than this are "large": they are cached like the rest (a memory-bound op on a
// fresh 64 MB block spends more time in page faults than in its loop: add of 16M floats ran at
// 5.5 GB/s uncached vs 31 GB/s cached), but any request the cache cannot serve first hands
// every cached large block back to the OS. Training steps repeat their sizes, so their steady
// state is all hits; evaluation passes over large batches cycle through many big sizes (conv1's
// 100 MB output cannot serve conv2's 50 MB one), and keeping each pinned in its own bin made a W2
// evaluation hold 424 MB of cache for a 212 MB live peak. With the release-on-miss rule the
// cache never grows the process: memory is only taken from the OS after the large cache is empty,
// so peak RSS stays at the peak of live blocks plus the small-block cache.
constexpr std::size_t kLargeBlock = std::size_t{16} << 20;

struct CpuCache {
  std::mutex mutex;
  std::unordered_map<std::size_t, std::vector<void*>> free_blocks;  // bin size -> blocks
  MemoryStats stats;
};

CpuCache& cache() {
  static auto* c = new CpuCache();  // never destroyed: tensors in static storage outlive main
  return *c;
}

}  // namespace

namespace detail {

std::size_t allocation_bin_size(std::size_t nbytes) {
  if (nbytes == 0) return kAlignment;
  if (nbytes <= 1024) return (nbytes + kAlignment - 1) / kAlignment * kAlignment;
  std::size_t top = std::bit_floor(nbytes);
  std::size_t step = top / 8;
  return (nbytes + step - 1) / step * step;
}

// Frees every cached block above kLargeBlock. Called with c.mutex held; returns the blocks so
// the caller frees them after unlocking (munmap of a big block takes microseconds).
std::vector<void*> take_large_blocks(CpuCache& c) {
  std::vector<void*> taken;
  for (auto it = c.free_blocks.begin(); it != c.free_blocks.end();) {
    if (it->first > kLargeBlock) {
      c.stats.cached_bytes -= static_cast<int64_t>(it->first * it->second.size());
      taken.insert(taken.end(), it->second.begin(), it->second.end());
      it = c.free_blocks.erase(it);
    } else {
      ++it;
    }
  }
  return taken;
}

void* cpu_allocate(std::size_t nbytes) {
  std::size_t size = allocation_bin_size(nbytes);
  CpuCache& c = cache();
  std::vector<void*> released;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    ++c.stats.allocations;
    auto it = c.free_blocks.find(size);
    if (it != c.free_blocks.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      ++c.stats.cache_hits;
      c.stats.cached_bytes -= static_cast<int64_t>(size);
      c.stats.current_bytes += static_cast<int64_t>(size);
      c.stats.peak_bytes = std::max(c.stats.peak_bytes, c.stats.current_bytes);
      return p;
    }
    released = take_large_blocks(c);
  }
  for (void* block : released) std::free(block);
  void* p = std::aligned_alloc(kAlignment, size);
  if (p == nullptr) {
    empty_cache();  // retry once after handing the cache back
    p = std::aligned_alloc(kAlignment, size);
  }
  ATH_CHECK(p != nullptr, Error, "out of memory allocating {} bytes", size);
  std::lock_guard<std::mutex> lock(c.mutex);
  ++c.stats.system_allocations;
  c.stats.current_bytes += static_cast<int64_t>(size);
  c.stats.peak_bytes = std::max(c.stats.peak_bytes, c.stats.current_bytes);
  return p;
}

void cpu_deallocate(void* ptr, std::size_t nbytes) {
  if (ptr == nullptr) return;
  std::size_t size = allocation_bin_size(nbytes);
  CpuCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.stats.current_bytes -= static_cast<int64_t>(size);
  c.free_blocks[size].push_back(ptr);
  c.stats.cached_bytes += static_cast<int64_t>(size);
}

}  // namespace detail

MemoryStats memory_stats() {
  CpuCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.stats;
}

void reset_peak_memory_stats() {
  CpuCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.stats.peak_bytes = c.stats.current_bytes;
}

void empty_cache() {
  CpuCache& c = cache();
  std::unordered_map<std::size_t, std::vector<void*>> blocks;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    blocks.swap(c.free_blocks);
    c.stats.cached_bytes = 0;
  }
  for (auto& [size, list] : blocks) {
    for (void* p : list) std::free(p);
  }
#ifdef __GLIBC__
  // glibc keeps freed heap (non-mmap) blocks in the process; hand their pages to the OS too, so
  // that "back to the OS" holds for every size.
  malloc_trim(0);
#endif
}

// ---- the per-device-type allocator table ----------------------------------------------------

namespace {

class CpuCachingAllocator final : public Allocator {
 public:
  void* allocate(std::size_t nbytes, Device) override { return detail::cpu_allocate(nbytes); }
  void deallocate(void* ptr, std::size_t nbytes, Device) override {
    detail::cpu_deallocate(ptr, nbytes);
  }
};

// Atomic so that installing an allocator while other threads allocate is well defined (an
// allocator is installed once, at start-up, in practice).
std::array<std::atomic<Allocator*>, kNumDeviceTypes>& allocators() {
  static_assert(static_cast<int>(DeviceType::CPU) == 0);
  static std::array<std::atomic<Allocator*>, kNumDeviceTypes> table{&cpu_caching_allocator()};
  return table;
}

}  // namespace

Allocator& cpu_caching_allocator() {
  static auto* a = new CpuCachingAllocator();  // never destroyed, like the cache
  return *a;
}

Allocator* allocator(DeviceType type) {
  return allocators()[static_cast<std::size_t>(type)].load(std::memory_order_acquire);
}

Allocator* set_allocator(DeviceType type, Allocator* a) {
  return allocators()[static_cast<std::size_t>(type)].exchange(a, std::memory_order_acq_rel);
}

}  // namespace ath
