// Samplers. Permutations are Fisher-Yates driven by Philox words keyed on (seed, epoch), so an
// epoch's order depends on nothing else (not threads, not workers, not what ran before).
#include "athanor/data/sampler.h"

#include <numeric>

#include "athanor/core/error.h"
#include "athanor/core/rng.h"
#include "athanor/data/sample_generator.h"

namespace ath::data {

std::vector<int64_t> permutation(int64_t n, uint64_t seed, int64_t epoch) {
  ATH_CHECK(n >= 0, ValueError, "permutation: n must be >= 0, got {}", n);
  std::vector<int64_t> p(static_cast<std::size_t>(n));
  std::iota(p.begin(), p.end(), int64_t{0});
  const uint64_t key = sample_seed(seed, epoch, -1);
  // Step i uses 64 random bits: block i / 2, words (i % 2) * 2 and +1.
  for (int64_t i = n - 1; i > 0; --i) {
    auto block = philox4x32(key, static_cast<uint64_t>(i) / 2);
    std::size_t w = static_cast<std::size_t>(i % 2) * 2;
    uint64_t r = (static_cast<uint64_t>(block[w]) << 32) | block[w + 1];
    auto j = static_cast<int64_t>(r % static_cast<uint64_t>(i + 1));
    std::swap(p[static_cast<std::size_t>(i)], p[static_cast<std::size_t>(j)]);
  }
  return p;
}

SequentialSampler::SequentialSampler(int64_t n) : n_(n) {
  ATH_CHECK(n >= 0, ValueError, "SequentialSampler: size must be >= 0, got {}", n);
}

std::vector<int64_t> SequentialSampler::indices() const {
  std::vector<int64_t> p(static_cast<std::size_t>(n_));
  std::iota(p.begin(), p.end(), int64_t{0});
  return p;
}

RandomSampler::RandomSampler(int64_t n, uint64_t seed) : n_(n), seed_(seed) {
  ATH_CHECK(n >= 0, ValueError, "RandomSampler: size must be >= 0, got {}", n);
}

std::vector<int64_t> RandomSampler::indices() const { return permutation(n_, seed_, epoch_); }

DistributedSampler::DistributedSampler(int64_t n, DistributedSamplerOptions options)
    : n_(n), options_(options) {
  const int64_t r = options.num_replicas;
  ATH_CHECK(n >= 0, ValueError, "DistributedSampler: size must be >= 0, got {}", n);
  ATH_CHECK(r >= 1, ValueError, "DistributedSampler: num_replicas must be >= 1, got {}", r);
  ATH_CHECK(options.rank >= 0 && options.rank < r, ValueError,
            "DistributedSampler: rank {} out of range for {} replicas", options.rank, r);
  // torch: drop_last and an uneven split -> ceil((n - R) / R), else ceil(n / R).
  if (options.drop_last && n % r != 0) {
    num_samples_ = n / r;
  } else {
    num_samples_ = (n + r - 1) / r;
  }
}

std::vector<int64_t> DistributedSampler::indices() const {
  const int64_t r = options_.num_replicas, total = num_samples_ * r;
  std::vector<int64_t> all;
  if (options_.shuffle) {
    all = permutation(n_, options_.seed, epoch_);
  } else {
    all.resize(static_cast<std::size_t>(n_));
    std::iota(all.begin(), all.end(), int64_t{0});
  }
  std::vector<int64_t> mine;
  mine.reserve(static_cast<std::size_t>(num_samples_));
  if (n_ == 0) return mine;
  // Padding repeats the order from its start (cyclically when it needs more than n), as torch.
  for (int64_t pos = options_.rank; pos < total; pos += r) {
    mine.push_back(all[static_cast<std::size_t>(pos % n_)]);
  }
  return mine;
}

}  // namespace ath::data
