// Where tensor memory comes from: one Allocator per device type, behind every storage
// allocation (StorageImpl::allocate). The CPU's is the caching allocator below; a device's
// allocator (CUDA's) or the graph compiler's arena plugs in with set_allocator.
//
// The caching CPU allocator: blocks are 64-byte aligned (a cache line and an AVX-512 vector)
// and, when freed, kept in per-size bins for reuse, so a training loop that allocates the same
// shapes every step stops calling malloc after step one. Blocks over 16 MB are handed back to
// the OS before any new block is taken from it, so the cache never raises the process's peak
// memory. Blocks of 256 KiB or more are mapped from the OS directly, so handing them back
// lowers the RSS at once.
//
//   auto before = memory_stats();
//   { Tensor t = empty({1024, 1024}); }               // freed into the cache, not to the OS
//   assert(memory_stats().current_bytes == before.current_bytes);
//   assert(memory_stats().cached_bytes >= 4 << 20);   // its 4 MB block, kept for reuse
//   empty_cache();                                     // hands cached blocks back to the OS
//   assert(memory_stats().cached_bytes == 0);
//   {
//     PeakBoundedCache bounded;                        // for work whose sizes will not recur
//     { Tensor a = empty({1 << 20}); }                 // 4 MB live at the peak, then cached
//     { Tensor b = empty({1 << 19}); }                 // a miss: the 4 MB block goes back first
//     assert(memory_stats().cached_bytes == 2 << 20);  // b's block only (unbounded: both)
//   }
//   assert(allocator(DeviceType::CPU) == &cpu_caching_allocator());
#pragma once

#include <cstddef>
#include <cstdint>

#include "athanor/core/device.h"

namespace ath {

// Memory for one device type's tensors. Implementations are thread-safe; a block is returned
// with the size and device it was allocated with.
class Allocator {
 public:
  virtual ~Allocator() = default;
  // A block of at least nbytes (nbytes may be 0), 64-byte aligned, on `device`. Throws an
  // ath::Error when the memory cannot be had.
  virtual void* allocate(std::size_t nbytes, Device device) = 0;
  virtual void deallocate(void* ptr, std::size_t nbytes, Device device) = 0;
};

// The allocator new storage on `type` comes from; null where none is installed (every type but
// the CPU, today).
Allocator* allocator(DeviceType type);
// Installs `a` for `type` and returns the previous one. `a` is not owned and must outlive every
// storage it allocated (each storage frees through the allocator that made it). Null removes it.
Allocator* set_allocator(DeviceType type, Allocator* a);
// The CPU's default allocator (the caching one below).
Allocator& cpu_caching_allocator();

struct MemoryStats {
  int64_t current_bytes = 0;       // bytes in live tensors (block sizes, after rounding)
  int64_t peak_bytes = 0;          // max of current_bytes since start or reset_peak_memory_stats()
  int64_t cached_bytes = 0;        // bytes held in the cache, free for reuse
  int64_t allocations = 0;         // allocate() calls
  int64_t cache_hits = 0;          // allocate() calls served from the cache
  int64_t system_allocations = 0;  // blocks obtained from the OS
};

MemoryStats memory_stats();
void reset_peak_memory_stats();
// Returns every cached (free) block to the OS. Live tensors are untouched.
void empty_cache();

// While one is alive (the bound is the process's, on every thread), the CPU cache hands blocks
// back to the OS before it takes new ones, so that live plus cached bytes never exceed the peak
// of live bytes since the first one began (nor live bytes plus the new block): the cache still
// serves repeated sizes, but cannot raise the process's peak above what is live. For work whose
// sizes will not come again, such as compile()'s traces, which the memory plan's arena
// replaces: a cache warmed on them would only be slack at the process's peak.
class PeakBoundedCache {
 public:
  PeakBoundedCache();
  ~PeakBoundedCache();
  PeakBoundedCache(const PeakBoundedCache&) = delete;
  PeakBoundedCache& operator=(const PeakBoundedCache&) = delete;
};

namespace detail {
// Rounds a request up to its bin size: 64-byte granules up to 1 KiB, then 8 bins per power of
// two, so at most 12.5% of a large block is slack and nearby sizes share a bin.
std::size_t allocation_bin_size(std::size_t nbytes);
void* cpu_allocate(std::size_t nbytes);              // returns a block of bin_size(nbytes)
void cpu_deallocate(void* ptr, std::size_t nbytes);  // nbytes as passed to cpu_allocate
}  // namespace detail

}  // namespace ath
