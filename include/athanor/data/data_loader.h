// DataLoader: batches from a Dataset, in sampler order, optionally loaded by worker threads,
// resumable at any batch. It is a BatchSource, so the Trainer takes it directly.
//
//   #include "athanor/data/tensor_dataset.h"
//   Tensor x = randn({200, 3}), y = randint(0, 2, {200});
//   auto ds = std::make_shared<data::TensorDataset>(data::TensorList{x, y});
//   data::DataLoader loader(ds, {.batch_size = 64, .shuffle = true, .seed = 1,
//                                .num_workers = 2});
//   loader.start_epoch(0);
//   while (auto b = loader.next()) assert((*b)[1].size(0) <= 64);  // TensorList{x [64, 3], y [64]}
//   nlohmann::json s = loader.state_dict();                 // {"epoch": 0, "next_batch": 4, ...}
//   assert(s["next_batch"] == 4);                           // 64 + 64 + 64 + 8 samples
//
// Guarantees:
// - Batches come out in sampler order whatever worker finished first; batch k holds the sampler's
//   positions [k * batch_size, (k + 1) * batch_size), the last one short unless drop_last.
// - shuffle: RandomSampler(size, seed), a fresh permutation per epoch from (seed, epoch).
// - Workers are std::threads (not OpenMP), started at the first start_epoch, joined by the
//   destructor; at most num_workers * prefetch_factor batches are loaded ahead of next().
//   num_workers = 0 loads on the calling thread inside next().
// - Random transforms draw from data::sample_generator(), seeded from (seed, epoch, position of
//   the sample in the epoch): identical batches for any num_workers and after a resume.
// - An exception in get(), a transform or collate is re-thrown by next() as ath::Error (the
//   original kind for an ath::Error, ValueError otherwise) prefixed "DataLoader: batch k of epoch
//   e: "; that batch is skipped and next() continues with the following one.
// - Resume: load_state_dict(s) then start_epoch(s["epoch"]) continues at s["next_batch"]; skipped
//   batches are never loaded (the loader starts at that position of the sampler's order).
// - With the default collate and a dataset that has get_batch() (TensorDataset, MNIST without a
//   transform, CsvDataset, TextBytesDataset, their Subsets), a batch is one gather per tensor.
// dataset.get() and a user collate are called concurrently from worker threads.
#pragma once

#include <concepts>
#include <memory>
#include <type_traits>
#include <vector>

#include "athanor/data/collate.h"
#include "athanor/data/dataset.h"
#include "athanor/data/loader_base.h"
#include "athanor/data/sample_generator.h"
#include "athanor/data/sampler.h"

namespace ath::data {

template <class S>
struct LoaderOptions {
  int64_t batch_size = 1;
  bool shuffle = false;
  uint64_t seed = 0;  // the shuffle's and the per-sample generators'
  bool drop_last = false;
  int64_t num_workers = 0;
  int64_t prefetch_factor = 2;  // batches in flight per worker
  // Replaces the Sequential/RandomSampler that shuffle selects (e.g. a DistributedSampler);
  // setting both is a ValueError.
  std::shared_ptr<Sampler> sampler = nullptr;
  CollateFn<S> collate = {};  // empty: default_collate
};

template <class D>
class DataLoader : public detail::LoaderBase {
 public:
  using Sample = typename D::Sample;
  using Options = LoaderOptions<Sample>;
  static_assert(std::is_base_of_v<Dataset<Sample>, D>,
                "DataLoader<D>: D must derive from data::Dataset<Sample> (use IterableLoader for "
                "an IterableDataset)");

  explicit DataLoader(std::shared_ptr<D> dataset, Options options = {})
      : detail::LoaderBase(config(*dataset, options), producer(dataset, options)),
        dataset_(std::move(dataset)),
        options_(std::move(options)) {}
  ~DataLoader() override { shutdown(); }

  const D& dataset() const { return *dataset_; }
  const Options& options() const { return options_; }
  std::string describe() const override { return dataset_->name(); }

 private:
  static detail::LoaderConfig config(const D& dataset, const Options& o) {
    ATH_CHECK(!(o.sampler && o.shuffle), ValueError,
              "DataLoader: sampler and shuffle are mutually exclusive (the sampler decides the "
              "order)");
    std::shared_ptr<Sampler> sampler = o.sampler;
    if (!sampler) {
      if (o.shuffle) {
        sampler = std::make_shared<RandomSampler>(dataset.size(), o.seed);
      } else {
        sampler = std::make_shared<SequentialSampler>(dataset.size());
      }
    }
    return {.batch_size = o.batch_size,
            .drop_last = o.drop_last,
            .num_workers = o.num_workers,
            .prefetch_factor = o.prefetch_factor,
            .seed = o.seed,
            .sampler = std::move(sampler)};
  }

  // Captures the dataset and the collate by value: workers never touch *this.
  static detail::BatchProducer producer(std::shared_ptr<D> dataset, const Options& o) {
    std::shared_ptr<const D> ds = std::move(dataset);
    return [ds, collate = o.collate, seed = o.seed](int64_t epoch, int64_t first,
                                                    std::span<const int64_t> idx) -> Batch {
      if (collate.is_default()) {
        if (auto b = ds->get_batch(idx)) return std::move(*b);
      }
      std::vector<Sample> samples;
      samples.reserve(idx.size());
      for (std::size_t j = 0; j < idx.size(); ++j) {
        SampleGeneratorScope scope(seed, epoch, first + static_cast<int64_t>(j));
        samples.push_back(ds->get(idx[j]));
      }
      return collate(std::move(samples));
    };
  }

  std::shared_ptr<D> dataset_;
  Options options_;
};

template <class D>
DataLoader(std::shared_ptr<D>, typename DataLoader<D>::Options) -> DataLoader<D>;
template <class D>
DataLoader(std::shared_ptr<D>) -> DataLoader<D>;

// An IterableDataset batched on the calling thread. Resume replays the stream: reset(epoch),
// then next_batch * batch_size samples are read and dropped (a stream cannot seek). shuffle,
// sampler and num_workers > 0 are ValueErrors (a stream has no indices to shuffle, and workers
// would each need their own shard). num_batches() is -1.
template <class D>
class IterableLoader : public BatchSource {
 public:
  using Sample = typename D::Sample;
  using Options = LoaderOptions<Sample>;

  explicit IterableLoader(std::shared_ptr<D> dataset, Options options = {})
      : dataset_(std::move(dataset)), options_(std::move(options)) {
    ATH_CHECK(options_.batch_size >= 1, ValueError,
              "IterableLoader: batch_size must be >= 1, got {}", options_.batch_size);
    ATH_CHECK(!options_.shuffle && !options_.sampler, ValueError,
              "IterableLoader: shuffle and sampler need a map-style Dataset");
    ATH_CHECK(options_.num_workers == 0, ValueError,
              "IterableLoader: num_workers must be 0 for an IterableDataset, got {}",
              options_.num_workers);
  }

  int64_t num_batches() const override { return -1; }
  std::string describe() const override { return dataset_->name(); }

  void start_epoch(int64_t epoch) override {
    epoch_ = epoch;
    next_batch_ = position_ = 0;
    ended_ = false;
    started_ = true;
    dataset_->reset(epoch);
    int64_t skip = 0;
    if (resume_ && resume_->first == epoch) skip = resume_->second;
    resume_.reset();
    for (int64_t k = 0; k < skip && !ended_; ++k) {
      for (int64_t j = 0; j < options_.batch_size; ++j) {
        if (!dataset_->next()) {
          ended_ = true;
          break;
        }
        ++position_;
      }
      ++next_batch_;
    }
  }

  std::optional<Batch> next() override {
    ATH_CHECK(started_, ValueError, "IterableLoader::next: call start_epoch(epoch) first");
    if (ended_) return std::nullopt;
    const int64_t k = next_batch_;
    try {
      std::vector<Sample> samples;
      samples.reserve(static_cast<std::size_t>(options_.batch_size));
      while (static_cast<int64_t>(samples.size()) < options_.batch_size) {
        SampleGeneratorScope scope(options_.seed, epoch_, position_);
        auto s = dataset_->next();
        if (!s) {
          ended_ = true;
          break;
        }
        ++position_;
        samples.push_back(std::move(*s));
      }
      if (samples.empty() ||
          (options_.drop_last && static_cast<int64_t>(samples.size()) < options_.batch_size)) {
        ended_ = true;
        return std::nullopt;
      }
      ++next_batch_;
      return options_.collate(std::move(samples));
    } catch (Error& e) {
      ++next_batch_;
      e.prepend(fmt::format("IterableLoader: batch {} of epoch {}: ", k, epoch_));
      throw;
    } catch (const std::exception& e) {
      ++next_batch_;
      ATH_THROW(ValueError, "IterableLoader: batch {} of epoch {}: {}", k, epoch_, e.what());
    }
  }

  nlohmann::json state_dict() const override {
    if (resume_) return {{"epoch", resume_->first}, {"next_batch", resume_->second}};
    return {{"epoch", epoch_},
            {"next_batch", next_batch_},
            {"batch_size", options_.batch_size},
            {"seed", options_.seed}};
  }

  void load_state_dict(const nlohmann::json& state) override {
    for (const char* key : {"epoch", "next_batch"}) {
      ATH_CHECK(state.contains(key), KeyError, "IterableLoader::load_state_dict: no \"{}\"", key);
    }
    if (state.contains("batch_size")) {
      ATH_CHECK(state.at("batch_size").get<int64_t>() == options_.batch_size, ValueError,
                "IterableLoader::load_state_dict: the state has batch_size {}, this loader {}",
                state.at("batch_size").get<int64_t>(), options_.batch_size);
    }
    resume_ = {state.at("epoch").get<int64_t>(), state.at("next_batch").get<int64_t>()};
  }

 private:
  std::shared_ptr<D> dataset_;
  Options options_;
  int64_t epoch_ = 0, next_batch_ = 0, position_ = 0;
  bool ended_ = false, started_ = false;
  std::optional<std::pair<int64_t, int64_t>> resume_;
};

// The BatchSource for a dataset, as Trainer::fit takes it: a DataLoader for a Dataset, an
// IterableLoader for an IterableDataset.
template <class D>
std::shared_ptr<BatchSource> make_loader(std::shared_ptr<D> dataset,
                                         LoaderOptions<typename D::Sample> options = {}) {
  if constexpr (std::is_base_of_v<Dataset<typename D::Sample>, D>) {
    return std::make_shared<DataLoader<D>>(std::move(dataset), std::move(options));
  } else {
    static_assert(std::is_base_of_v<IterableDataset<typename D::Sample>, D>,
                  "make_loader: D must derive from data::Dataset or data::IterableDataset");
    return std::make_shared<IterableLoader<D>>(std::move(dataset), std::move(options));
  }
}

}  // namespace ath::data
