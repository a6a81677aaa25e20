// Datasets: the two shapes data comes in, as in torch.utils.data.
//
//   struct Squares : data::Dataset<Tensor> {             // map-style: size() + get(i)
//     int64_t size() const override { return 100; }
//     Tensor get(int64_t i) const override { return full({2}, double(i * i)); }
//   };
//   struct Stream : data::IterableDataset<int64_t> {     // iterable: next() until nullopt
//     int64_t i_ = 0;
//     void reset(int64_t /*epoch*/) override { i_ = 0; }
//     std::optional<int64_t> next() override {
//       return i_ < 10 ? std::optional(i_++) : std::nullopt;
//     }
//   };
//   assert(Squares().get(3).sum().item<double>() == 18);   // [9, 9]
//   Stream stream;
//   stream.reset(/*epoch=*/0);
//   while (auto v = stream.next()) assert(*v < 10);         // 0, 1, ..., 9
//
// get() is const and called concurrently by the DataLoader's worker threads: it must not mutate
// shared state. Random augmentations draw from data::sample_generator() (sample_generator.h) so
// they reproduce on resume whatever the number of workers.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "athanor/core/error.h"
#include "athanor/data/batch.h"

namespace ath::data {

// IndexError "<dataset>: index <i> out of range for a dataset of <n> samples". Negative indices
// are rejected (no Python-style wrap-around: a negative index here is almost always a bug).
inline void check_index(int64_t index, int64_t size, const std::string& dataset) {
  ATH_CHECK(index >= 0 && index < size, IndexError,
            "{}: index {} out of range for a dataset of {} samples", dataset, index, size);
}

template <class SampleT>
class Dataset {
 public:
  using Sample = SampleT;
  virtual ~Dataset() = default;

  virtual int64_t size() const = 0;
  // Sample `index` in [0, size()); IndexError (via check_index) otherwise.
  virtual Sample get(int64_t index) const = 0;
  // The name errors use ("TensorDataset", "FashionMNIST(train)").
  virtual std::string name() const { return "Dataset"; }

  // Optional fast path: the whole batch for `indices`, exactly as the default collate would
  // build it from get() of each index (same type, shapes, dtypes and values), or nullopt when
  // the dataset has none. The loader uses it only with the default collate, and does not set a
  // sample generator for it: datasets with random transforms must answer nullopt. Datasets that
  // hold whole tensors answer with one gather instead of one get() and one copy per sample.
  virtual std::optional<Batch> get_batch(std::span<const int64_t> /*indices*/) const {
    return std::nullopt;
  }
};

// A stream of samples (a file read once, a generator). next() returns nullopt at the end of the
// epoch; reset(epoch) rewinds to the start of epoch `epoch` (shuffle buffers may use it).
// Called from one thread at a time.
template <class SampleT>
class IterableDataset {
 public:
  using Sample = SampleT;
  virtual ~IterableDataset() = default;

  virtual void reset(int64_t epoch) = 0;
  virtual std::optional<Sample> next() = 0;
  virtual std::string name() const { return "IterableDataset"; }
};

}  // namespace ath::data
