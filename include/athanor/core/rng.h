// Philox4x32-10 counter-based random numbers. A draw of n numbers reserves a range of counters
// from a Generator; element i of the draw is a pure function of (seed, counter base, i), so the
// numbers do not depend on how many threads fill the tensor or in which order.
//
//   manual_seed(0);                 // the global generator
//   Generator g(42);                // or an explicit one: rand({3}, {.generator = &g})
//   uint64_t n = 8, i = 5;
//   uint64_t base = g.reserve(n);   // counters [base, base + ceil(n/4)) are now used
//   float u = philox_uniform(g.seed(), base, i);   // element i in [0, 1)
//   Generator h(42);
//   assert(rand({8}, {.generator = &h}).data<float>()[i] == u);   // what rand({8}) draws
#pragma once

#include <array>
#include <cstdint>
#include <mutex>

namespace ath {

// The Philox4x32-10 bijection on a full 128-bit counter and 64-bit key (Random123's
// philox4x32_R(10, ctr, key)); its known-answer vectors are in the tests.
std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> ctr, std::array<uint32_t, 2> key);
// One block for (key, counter): counter in words 0-1, words 2-3 zero.
inline std::array<uint32_t, 4> philox4x32(uint64_t key, uint64_t counter) {
  return philox4x32_10({static_cast<uint32_t>(counter), static_cast<uint32_t>(counter >> 32), 0, 0},
                       {static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)});
}

class Generator {
 public:
  explicit Generator(uint64_t seed = 67280421310721ULL) : seed_(seed) {}
  Generator(const Generator& other) : seed_(other.seed()), offset_(other.offset()) {}
  Generator& operator=(const Generator& other);

  void manual_seed(uint64_t seed);
  uint64_t seed() const;
  uint64_t offset() const;  // the next unused counter
  void set_offset(uint64_t offset);

  // Reserves counters for n 32-bit words (rounded up to whole blocks) and returns the first.
  uint64_t reserve(uint64_t n_words);

 private:
  mutable std::mutex mutex_;
  uint64_t seed_;
  uint64_t offset_ = 0;
};

Generator& default_generator();
void manual_seed(uint64_t seed);

// Element i of a draw that reserved counters from `base`.
inline uint32_t philox_word(uint64_t key, uint64_t base, uint64_t i) {
  return philox4x32(key, base + i / 4)[i % 4];
}
// Uniform in [0, 1) with 24 random bits, like torch's float uniform.
inline float philox_uniform(uint64_t key, uint64_t base, uint64_t i) {
  return static_cast<float>(philox_word(key, base, i) >> 8) * (1.0f / 16777216.0f);
}
// Uniform in [0, 1) with 53 random bits, from two words (a draw of n doubles uses 2n words).
double philox_uniform_double(uint64_t key, uint64_t base, uint64_t i);
// Standard normal, Box-Muller over the two uniforms of element i (a draw uses 2n words).
double philox_normal(uint64_t key, uint64_t base, uint64_t i);

}  // namespace ath
