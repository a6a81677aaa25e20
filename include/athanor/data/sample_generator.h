// The random generator of the sample being loaded: what random transforms draw from.
//
//   Tensor flip_maybe(const Tensor& img) {
//     Generator& g = data::sample_generator();
//     return philox_uniform(g.seed(), g.reserve(1), 0) < 0.5f ? flip(img, {-1}) : img;
//   }
//   Tensor img = rand({1, 28, 28}), a, b;
//   { data::SampleGeneratorScope s(/*seed=*/1, /*epoch=*/0, /*position=*/5); a = flip_maybe(img); }
//   { data::SampleGeneratorScope s(/*seed=*/1, /*epoch=*/0, /*position=*/5); b = flip_maybe(img); }
//   assert(all(eq(a, b)).item<bool>());   // sample 5 of epoch 0: the same flip every time
//
// Before each get(), the DataLoader installs (for the calling thread) a Generator whose seed is
// a hash of (loader seed, epoch, the sample's position in the epoch's order), at offset 0. So a
// sample's augmentation depends only on those three numbers: not on which worker loads it, not
// on how many workers there are, and it is the same again after a resume. Outside a loader
// (a plain get() call), sample_generator() is the global default_generator().
#pragma once

#include <cstdint>

#include "athanor/core/rng.h"

namespace ath::data {

Generator& sample_generator();

// The seed of sample `position` of epoch `epoch` under loader seed `seed` (a splitmix64 chain).
uint64_t sample_seed(uint64_t seed, int64_t epoch, int64_t position);

// Installs Generator(sample_seed(...)) as this thread's sample generator until destroyed
// (restoring the previous one). The loaders use it; a custom BatchSource can too.
class SampleGeneratorScope {
 public:
  SampleGeneratorScope(uint64_t seed, int64_t epoch, int64_t position);
  ~SampleGeneratorScope();
  SampleGeneratorScope(const SampleGeneratorScope&) = delete;
  SampleGeneratorScope& operator=(const SampleGeneratorScope&) = delete;

 private:
  Generator generator_;
  Generator* previous_;
};

// Uniform integer in [0, n) from one reserved word of g (n > 0; modulo bias below 2^-32 * n,
// negligible for crop offsets and indices).
inline int64_t uniform_int(Generator& g, int64_t n) {
  uint64_t base = g.reserve(2);
  uint64_t hi = philox_word(g.seed(), base, 0), lo = philox_word(g.seed(), base, 1);
  return static_cast<int64_t>(((hi << 32) | lo) % static_cast<uint64_t>(n));
}
// Uniform float in [0, 1) from one reserved word of g.
inline float uniform_float(Generator& g) { return philox_uniform(g.seed(), g.reserve(1), 0); }

}  // namespace ath::data
