// Per-sample generators: a thread_local pointer the loaders set around each get().
#include "athanor/data/sample_generator.h"

namespace ath::data {
namespace {
thread_local Generator* t_sample_generator = nullptr;

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}
}  // namespace

Generator& sample_generator() {
  return t_sample_generator != nullptr ? *t_sample_generator : default_generator();
}

uint64_t sample_seed(uint64_t seed, int64_t epoch, int64_t position) {
  uint64_t h = splitmix64(seed);
  h = splitmix64(h ^ static_cast<uint64_t>(epoch));
  return splitmix64(h ^ static_cast<uint64_t>(position));
}

SampleGeneratorScope::SampleGeneratorScope(uint64_t seed, int64_t epoch, int64_t position)
    : generator_(sample_seed(seed, epoch, position)), previous_(t_sample_generator) {
  t_sample_generator = &generator_;
}

SampleGeneratorScope::~SampleGeneratorScope() { t_sample_generator = previous_; }

}  // namespace ath::data
