#include "athanor/core/rng.h"

#include <cmath>
#include <numbers>

namespace ath {

std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> ctr, std::array<uint32_t, 2> key) {
  // Constants from Salmon et al., "Parallel random numbers: as easy as 1, 2, 3" (SC'11).
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
  uint32_t k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = static_cast<uint64_t>(kM0) * c0;
    uint64_t p1 = static_cast<uint64_t>(kM1) * c2;
    uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += kW0;
    k1 += kW1;
  }
  return {c0, c1, c2, c3};
}

Generator& Generator::operator=(const Generator& other) {
  if (this != &other) {
    uint64_t s = other.seed(), o = other.offset();
    std::lock_guard<std::mutex> lock(mutex_);
    seed_ = s;
    offset_ = o;
  }
  return *this;
}

void Generator::manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(mutex_);
  seed_ = seed;
  offset_ = 0;
}
uint64_t Generator::seed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return seed_;
}
uint64_t Generator::offset() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return offset_;
}
void Generator::set_offset(uint64_t offset) {
  std::lock_guard<std::mutex> lock(mutex_);
  offset_ = offset;
}
uint64_t Generator::reserve(uint64_t n_words) {
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t base = offset_;
  offset_ += (n_words + 3) / 4;
  return base;
}

Generator& default_generator() {
  static Generator g;
  return g;
}
void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

double philox_uniform_double(uint64_t key, uint64_t base, uint64_t i) {
  uint64_t a = philox_word(key, base, 2 * i), b = philox_word(key, base, 2 * i + 1);
  uint64_t bits = ((a << 32) | b) >> 11;
  return static_cast<double>(bits) * (1.0 / 9007199254740992.0);
}

double philox_normal(uint64_t key, uint64_t base, uint64_t i) {
  // Box-Muller; u1 in (0, 1] so the log is finite.
  double u1 = 1.0 - static_cast<double>(philox_word(key, base, 2 * i)) * (1.0 / 4294967296.0);
  double u2 = static_cast<double>(philox_word(key, base, 2 * i + 1)) * (1.0 / 4294967296.0);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace ath
