// Samplers: the order in which a DataLoader visits a dataset's indices, one epoch at a time.
//
//   data::RandomSampler s(60000, /*seed=*/42);
//   s.set_epoch(3);
//   std::vector<int64_t> order = s.indices();   // depends only on (seed, epoch)
//   assert(order == data::permutation(60000, 42, 3));
//
//   data::DistributedSampler d(60000, {.num_replicas = 4, .rank = 1, .seed = 42});
//   d.set_epoch(3);
//   assert(d.indices().size() == 15000);         // rank 1's quarter
//
// indices() materializes the whole epoch (8 bytes per index): the loader resumes mid-epoch by
// starting at position next_batch * batch_size of that list, never loading skipped samples.
// Shuffles are Philox-based Fisher-Yates permutations (not torch's order; same guarantees).
#pragma once

#include <cstdint>
#include <vector>

namespace ath::data {

class Sampler {
 public:
  virtual ~Sampler() = default;
  // Indices per epoch.
  virtual int64_t size() const = 0;
  // The current epoch's indices, in visiting order (size() of them).
  virtual std::vector<int64_t> indices() const = 0;
  virtual void set_epoch(int64_t epoch) { epoch_ = epoch; }
  int64_t epoch() const { return epoch_; }

 protected:
  int64_t epoch_ = 0;
};

// A uniformly random permutation of 0..n-1, a pure function of (seed, epoch).
std::vector<int64_t> permutation(int64_t n, uint64_t seed, int64_t epoch);

// 0, 1, ..., n-1 every epoch.
class SequentialSampler : public Sampler {
 public:
  explicit SequentialSampler(int64_t n);
  int64_t size() const override { return n_; }
  std::vector<int64_t> indices() const override;

 private:
  int64_t n_;
};

// permutation(n, seed, epoch): reshuffled each epoch, the same for the same (seed, epoch).
class RandomSampler : public Sampler {
 public:
  explicit RandomSampler(int64_t n, uint64_t seed = 0);
  int64_t size() const override { return n_; }
  std::vector<int64_t> indices() const override;

 private:
  int64_t n_;
  uint64_t seed_;
};

struct DistributedSamplerOptions {
  int64_t num_replicas = 1;
  int64_t rank = 0;
  bool shuffle = true;
  uint64_t seed = 0;  // must be the same on every rank
  bool drop_last = false;
};

// torch.utils.data.DistributedSampler's semantics: every rank gets the same count,
// ceil(n / R) (padding by repeating indices from the start of the epoch's order), or with
// drop_last floor(n / R) (dropping the tail); rank r takes positions r, r + R, r + 2R, ...
class DistributedSampler : public Sampler {
 public:
  DistributedSampler(int64_t n, DistributedSamplerOptions options = {});
  int64_t size() const override { return num_samples_; }
  std::vector<int64_t> indices() const override;
  const DistributedSamplerOptions& options() const { return options_; }

 private:
  int64_t n_;
  DistributedSamplerOptions options_;
  int64_t num_samples_ = 0;
};

}  // namespace ath::data
