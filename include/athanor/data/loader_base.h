// The DataLoader's machinery, independent of the sample type: epoch order from the sampler,
// batching, the worker threads with their bounded, ordered prefetch window, error wrapping and
// resumable state. DataLoader<D> (data_loader.h) only supplies how one batch is produced.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>

#include "athanor/data/batch_source.h"
#include "athanor/data/sampler.h"

namespace ath::data::detail {

// Requests past these are refused up front (one thread per worker; the prefetch window is
// num_workers * prefetch_factor batches held in memory).
inline constexpr int64_t kMaxNumWorkers = 256;
inline constexpr int64_t kMaxPrefetchFactor = 1024;

struct LoaderConfig {
  int64_t batch_size = 1;
  bool drop_last = false;
  int64_t num_workers = 0;
  int64_t prefetch_factor = 2;
  uint64_t seed = 0;
  std::shared_ptr<Sampler> sampler = nullptr;
};

// Produces batch `batch` of epoch `epoch`: `indices` are its dataset indices, the first at
// position `first_position` of the epoch's order. Called concurrently on worker threads; must
// not refer to the DataLoader object itself (it may be mid-destruction when a worker runs).
using BatchProducer =
    std::function<Batch(int64_t epoch, int64_t first_position, std::span<const int64_t> indices)>;

class LoaderBase : public BatchSource {
 public:
  ~LoaderBase() override;
  LoaderBase(const LoaderBase&) = delete;
  LoaderBase& operator=(const LoaderBase&) = delete;

  int64_t num_batches() const override;
  void start_epoch(int64_t epoch) override;
  std::optional<Batch> next() override;
  // {"epoch", "next_batch", "num_batches", "batch_size", "seed"}.
  nlohmann::json state_dict() const override;
  // KeyError for a missing "epoch"/"next_batch"; ValueError when batch_size or seed differ
  // from this loader's (the resumed batches would not be the same) or next_batch is out of range.
  void load_state_dict(const nlohmann::json& state) override;

  int64_t size() const { return num_batches(); }
  int64_t epoch() const;
  Sampler& sampler() const;
  std::shared_ptr<Sampler> sampler_ptr() const;
  // Replaces the sampler; the next start_epoch uses it (the Trainer inserts a
  // DistributedSampler for data-parallel training before its first epoch).
  void set_sampler(std::shared_ptr<Sampler> sampler);
  uint64_t seed() const;
  // Joins the worker threads (idempotent; the destructor calls it). The loader cannot be used
  // afterwards.
  void shutdown();

 protected:
  LoaderBase(LoaderConfig config, BatchProducer producer);

 private:
  struct Engine;
  std::unique_ptr<Engine> engine_;
};

}  // namespace ath::data::detail
