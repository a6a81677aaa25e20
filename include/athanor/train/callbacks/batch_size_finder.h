// BatchSizeFinder: Lightning's batch-size scaler as a callback. At the start of fit it tries
// batch sizes — doubling from init_val ("power"), then bisecting after the first failure
// ("binsearch") — with a few training steps each, keeps the largest that worked, rebuilds the
// training source with it and puts the module, optimizer and RNG back as they were.
//
//   #include "athanor/data/data.h"
//   #include "athanor/nn/linear.h"
//   #include "athanor/train/tasks.h"
//   #include "athanor/train/trainer.h"
//   auto net = std::make_shared<nn::Linear>(nn::LinearOptions{.in = 4, .out = 3});
//   train::ClassificationTask model(net, {.name = "sgd", .lr = 0.1});
//   auto dataset = std::make_shared<data::TensorDataset>(
//       data::TensorList{randn({64, 4}), randint(0, 3, {64})});
//   auto make = [&](int64_t bs) { return data::make_loader(dataset, {.batch_size = bs}); };
//   auto finder = std::make_shared<train::BatchSizeFinder>(make, train::BatchSizeFinderOptions{
//       .max_memory_mb = 512});
//   train::Trainer trainer({.max_epochs = 1, .callbacks = {finder}});
//   trainer.fit(model, make(32));           // trains with finder->optimal_batch_size()
//   assert(finder->optimal_batch_size() == 64);   // all 64 samples in one batch: no larger size
//
// There is no CUDA out-of-memory to catch on the CPU, so a trial fails when it throws or when
// the allocator's peak (memory_stats().peak_bytes, reset before each trial) passes max_memory_mb.
// Sizes stop growing once one batch holds the whole epoch (num_batches() <= 1); the result is
// then that batch's size (the data set's length). If no size
// works, fit fails with the last trial's reason.
//
// from_memory_plan (with max_memory_mb) predicts instead of searching: the training step is
// traced at init_val and 2 x init_val (graph/estimate_memory.h), the memory plans' growth per
// sample extrapolates the peak (anchored on the peak measured at init_val, which counts what
// else the process holds), and only the largest size predicted under the cap is tried — then
// sizes 10% smaller while a trial's measured peak still passes the cap. No trial at a size that
// cannot fit: two small traced steps and, typically, one trial.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "athanor/data/batch_source.h"
#include "athanor/train/callback.h"

namespace ath::train {

struct BatchSizeFinderOptions {
  std::string mode = "power";  // or "binsearch"
  int64_t init_val = 2;
  int64_t max_trials = 25;
  int64_t steps_per_trial = 3;
  std::optional<double> max_memory_mb;
  bool from_memory_plan = false;  // needs max_memory_mb and batches of tensors (TensorList)
};

class BatchSizeFinder : public Callback {
 public:
  using SourceFactory = std::function<std::shared_ptr<data::BatchSource>(int64_t batch_size)>;
  struct Trial {
    int64_t batch_size = 0;
    bool ok = false;
    int64_t peak_bytes = 0;
    std::string error;  // why it failed (empty when ok, or when only the memory cap was hit)
    // from_memory_plan: the traced steps' planned peak, or the peak predicted for a trial.
    int64_t planned_bytes = 0;
    bool traced = false;  // a traced planning step, not a trial
  };

  BatchSizeFinder(SourceFactory factory, BatchSizeFinderOptions options = {});

  std::string state_key() const override { return "BatchSizeFinder"; }
  void on_fit_start(Trainer& trainer, TrainingModule& module) override;

  // Runs the search now and installs the source for the result (on_fit_start calls it).
  int64_t scale_batch_size(Trainer& trainer, TrainingModule& module);

  std::optional<int64_t> optimal_batch_size() const { return optimal_; }
  const std::vector<Trial>& trials() const { return trials_; }

 private:
  bool try_size(Trainer& trainer, TrainingModule& module, int64_t size, bool& whole_epoch,
                int64_t& largest_batch);
  // from_memory_plan: traces one step at `size`; records a traced Trial.
  const Trial& plan_size(Trainer& trainer, TrainingModule& module, int64_t size, bool& whole_epoch,
                         int64_t& batch_length);
  std::optional<int64_t> search_by_plan(Trainer& trainer, TrainingModule& module);
  std::optional<int64_t> search_by_trials(Trainer& trainer, TrainingModule& module);

  SourceFactory factory_;
  BatchSizeFinderOptions options_;
  std::optional<int64_t> optimal_;
  std::vector<Trial> trials_;
};

}  // namespace ath::train
