#include "athanor/core/behavior_state.h"

#include <atomic>

namespace ath {

namespace {

std::atomic<uint64_t> g_fingerprint{0};
std::atomic<uint64_t> g_generation{0};

// splitmix64's finalizer: neighbouring addresses give unrelated bits.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

uint64_t behavior_fingerprint() {
  const uint64_t generation = g_generation.load(std::memory_order_acquire);
  return g_fingerprint.load(std::memory_order_acquire) ^ (generation == 0 ? 0 : mix(~generation));
}

void note_state_replaced() { g_generation.fetch_add(1, std::memory_order_acq_rel); }

void flip_behavior_flag(const void* owner) {
  g_fingerprint.fetch_xor(mix(reinterpret_cast<uintptr_t>(owner)), std::memory_order_acq_rel);
}

}  // namespace ath
