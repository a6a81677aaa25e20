// BatchSource: what the Trainer consumes — one epoch of batches at a time, resumable at any
// batch. DataLoader implements it; a user can implement it for data that is not a Dataset.
//
//   #include "athanor/data/data.h"
//   auto ds = std::make_shared<data::TensorDataset>(data::TensorList{randn({10, 3})});
//   std::shared_ptr<data::BatchSource> source = data::make_loader(ds, {.batch_size = 4});
//   source->start_epoch(0);               // shuffles from (seed, epoch); resumes a loaded state
//   std::optional<data::Batch> first = source->next();   // batch 0: 4 samples
//   nlohmann::json s = source->state_dict();             // {"epoch": 0, "next_batch": 1, ...}
//   auto other = data::make_loader(ds, {.batch_size = 4});
//   other->load_state_dict(s);            // the next start_epoch(0) continues at batch 1
//   other->start_epoch(0);
//   while (auto batch = other->next()) assert(batch->size() <= 4);   // batches 1 and 2
//
// Exact resume contract: after load_state_dict(state_dict()) taken between two next() calls,
// start_epoch(same epoch) yields exactly the batches the original would have yielded next,
// bit for bit (random transforms included), whatever the number of worker threads.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "athanor/data/batch.h"

namespace ath::data {

class BatchSource {
 public:
  virtual ~BatchSource() = default;

  // Batches per epoch, or -1 when unknown (an iterable dataset).
  virtual int64_t num_batches() const = 0;
  // Begins epoch `epoch` (0-based). Pending batches of an unfinished epoch are dropped. If a
  // state for this epoch was loaded, continues from its position instead of the start.
  virtual void start_epoch(int64_t epoch) = 0;
  // The next batch of the current epoch, or nullopt at its end. A failure while producing a
  // batch (in the dataset, a transform or the collate function, on any worker thread) is
  // re-thrown here as ath::Error naming the batch index and the original message.
  virtual std::optional<Batch> next() = 0;
  // Position within the epoch: enough to resume at the next batch.
  virtual nlohmann::json state_dict() const = 0;
  virtual void load_state_dict(const nlohmann::json& state) = 0;
  // Where the batches come from, for messages ("CsvDataset('houses.csv')"); empty if unknown.
  virtual std::string describe() const { return {}; }
};

}  // namespace ath::data
