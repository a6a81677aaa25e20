// Size-binned free lists behind one mutex. A mutex (not thread-local caches) keeps peak memory
// honest and blocks reusable across threads; data-loader workers allocate too, and the cost of
// an uncontended lock (~20 ns) is small next to an op's dispatch.
#include "athanor/core/allocator.h"

#include <sys/mman.h>

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstdlib>
#include <functional>
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

// Blocks of at least this size are mapped from the OS directly (mmap) and unmapped when the cache
// lets them go, so handing one back lowers the process's RSS at once. Through malloc they would
// not reliably: glibc raises its mmap threshold each time it unmaps a block (up to 32 MB), after
// which blocks of that size come from the heap, whose freed middle stays resident. Under a
// sanitizer they stay with malloc, whose redzones catch overruns that a page would not.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)  // GCC's spelling
constexpr bool kMapLargeBlocks = false;
#elif defined(__has_feature)  // clang's
constexpr bool kMapLargeBlocks =
    !(__has_feature(address_sanitizer) || __has_feature(thread_sanitizer) ||
      __has_feature(memory_sanitizer));
#else
constexpr bool kMapLargeBlocks = true;
#endif
constexpr std::size_t kMappedBlock = std::size_t{256} << 10;

bool is_mapped(std::size_t bin_size) { return kMapLargeBlocks && bin_size >= kMappedBlock; }

// A block of `size` (a bin size) from the OS: mapped when large, else from malloc. Null when
// the memory cannot be had.
void* system_allocate(std::size_t size) {
  if (!is_mapped(size)) return std::aligned_alloc(kAlignment, size);
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;  // page-aligned, so 64-byte aligned
}

void system_free(void* p, std::size_t size) {
  if (is_mapped(size)) {
    munmap(p, size);
  } else {
    std::free(p);
  }
}

struct CpuCache {
  std::mutex mutex;
  std::unordered_map<std::size_t, std::vector<void*>> free_blocks;  // bin size -> blocks
  MemoryStats stats;
  // PeakBoundedCache: how many are alive, and the peak of live bytes since the first began.
  int bounded_scopes = 0;
  int64_t scope_peak = 0;
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

// Frees every cached block above kLargeBlock. Called with c.mutex held; returns the blocks and
// their sizes so the caller frees them after unlocking (munmap of a big block takes
// microseconds).
std::vector<std::pair<void*, std::size_t>> take_large_blocks(CpuCache& c) {
  std::vector<std::pair<void*, std::size_t>> taken;
  for (auto it = c.free_blocks.begin(); it != c.free_blocks.end();) {
    if (it->first > kLargeBlock) {
      c.stats.cached_bytes -= static_cast<int64_t>(it->first * it->second.size());
      for (void* p : it->second) taken.emplace_back(p, it->first);
      it = c.free_blocks.erase(it);
    } else {
      ++it;
    }
  }
  return taken;
}

// Under a PeakBoundedCache, before a miss takes `size` bytes from the OS: takes cached large
// blocks, largest first, until live + cached + size is at most the larger of the scope's peak of
// live bytes and live + size. Called with c.mutex held; the caller frees what it returns.
std::vector<std::pair<void*, std::size_t>> take_blocks_over_peak(CpuCache& c, std::size_t size) {
  std::vector<std::pair<void*, std::size_t>> taken;
  const int64_t need = static_cast<int64_t>(size);
  const int64_t bound = std::max(c.scope_peak, c.stats.current_bytes + need);
  int64_t excess = c.stats.current_bytes + c.stats.cached_bytes + need - bound;
  if (excess <= 0) return taken;
  std::vector<std::size_t> sizes;
  for (const auto& [bin, blocks] : c.free_blocks)
    if (bin >= kMappedBlock && !blocks.empty()) sizes.push_back(bin);
  std::sort(sizes.begin(), sizes.end(), std::greater<>());
  for (std::size_t bin : sizes) {
    std::vector<void*>& blocks = c.free_blocks[bin];
    while (excess > 0 && !blocks.empty()) {
      taken.emplace_back(blocks.back(), bin);
      blocks.pop_back();
      c.stats.cached_bytes -= static_cast<int64_t>(bin);
      excess -= static_cast<int64_t>(bin);
    }
    if (excess <= 0) break;
  }
  return taken;
}

void* cpu_allocate(std::size_t nbytes) {
  std::size_t size = allocation_bin_size(nbytes);
  CpuCache& c = cache();
  std::vector<std::pair<void*, std::size_t>> released;
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
      c.scope_peak = std::max(c.scope_peak, c.stats.current_bytes);
      return p;
    }
    released = take_large_blocks(c);
    if (c.bounded_scopes > 0) {
      std::vector<std::pair<void*, std::size_t>> more = take_blocks_over_peak(c, size);
      released.insert(released.end(), more.begin(), more.end());
    }
  }
  for (auto [block, block_size] : released) system_free(block, block_size);
  void* p = system_allocate(size);
  if (p == nullptr) {
    empty_cache();  // retry once after handing the cache back
    p = system_allocate(size);
  }
  ATH_CHECK(p != nullptr, Error, "out of memory allocating {} bytes", size);
  std::lock_guard<std::mutex> lock(c.mutex);
  ++c.stats.system_allocations;
  c.stats.current_bytes += static_cast<int64_t>(size);
  c.stats.peak_bytes = std::max(c.stats.peak_bytes, c.stats.current_bytes);
  c.scope_peak = std::max(c.scope_peak, c.stats.current_bytes);
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
    for (void* p : list) system_free(p, size);
  }
#ifdef __GLIBC__
  // glibc keeps freed heap (non-mmap) blocks in the process; hand their pages to the OS too, so
  // that "back to the OS" holds for every size.
  malloc_trim(0);
#endif
}

PeakBoundedCache::PeakBoundedCache() {
  CpuCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  if (c.bounded_scopes++ == 0) c.scope_peak = c.stats.current_bytes;
}
PeakBoundedCache::~PeakBoundedCache() {
  CpuCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  --c.bounded_scopes;
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
