// BatchSizeFinder (see the header): Lightning's _run_power_scaling / _run_binary_scaling with
// "out of memory" redefined for the CPU.
#include "athanor/train/callbacks/batch_size_finder.h"

#include <fmt/format.h>

#include "../step_runner.h"
#include "athanor/core/allocator.h"
#include "athanor/core/error.h"
#include "athanor/train/trainer.h"
#include "training_snapshot.h"

namespace ath::train {

BatchSizeFinder::BatchSizeFinder(SourceFactory factory, BatchSizeFinderOptions options)
    : factory_(std::move(factory)), options_(std::move(options)) {
  const auto& o = options_;
  ATH_CHECK(factory_ != nullptr, ValueError, "BatchSizeFinder: the source factory is empty");
  ATH_CHECK(o.mode == "power" || o.mode == "binsearch", ValueError,
            "BatchSizeFinder: mode must be 'power' or 'binsearch', got '{}'", o.mode);
  ATH_CHECK(o.init_val >= 1, ValueError, "BatchSizeFinder: init_val must be >= 1, got {}",
            o.init_val);
  ATH_CHECK(o.max_trials >= 1, ValueError, "BatchSizeFinder: max_trials must be >= 1, got {}",
            o.max_trials);
  ATH_CHECK(o.steps_per_trial >= 1, ValueError,
            "BatchSizeFinder: steps_per_trial must be >= 1, got {}", o.steps_per_trial);
  ATH_CHECK(!o.max_memory_mb || *o.max_memory_mb > 0, ValueError,
            "BatchSizeFinder: max_memory_mb must be positive, got {}", o.max_memory_mb.value_or(0));
}

void BatchSizeFinder::on_fit_start(Trainer& trainer, TrainingModule& module) {
  scale_batch_size(trainer, module);
}

bool BatchSizeFinder::try_size(Trainer& trainer, TrainingModule& module, int64_t size,
                               bool& whole_epoch, int64_t& largest_batch) {
  Trial trial{.batch_size = size};
  reset_peak_memory_stats();
  try {
    std::shared_ptr<data::BatchSource> source = factory_(size);
    ATH_CHECK(source != nullptr, ValueError,
              "BatchSizeFinder: the factory returned no source for batch size {}", size);
    whole_epoch = source->num_batches() >= 0 && source->num_batches() <= 1;
    int64_t epoch = 0;
    source->start_epoch(epoch);
    module.train();
    StepRunner runner(trainer, module);  // fit's step, without fit's hooks
    const int64_t accumulate = trainer.accumulate_grad_batches();
    int64_t accumulated = 0;
    for (int64_t step = 0; step < options_.steps_per_trial; ++step) {
      std::optional<data::Batch> batch = source->next();
      if (!batch) {
        source->start_epoch(++epoch);
        batch = source->next();
        ATH_CHECK(batch.has_value(), ValueError,
                  "BatchSizeFinder: the source for batch size {} yields no batches", size);
      }
      largest_batch = std::max(largest_batch, batch->size());
      Tensor loss = runner.training_step(*batch, step);
      if (!loss.defined()) continue;
      runner.backward(loss, accumulated, accumulate);
      ++accumulated;
      if (accumulated == accumulate || step + 1 == options_.steps_per_trial) {
        runner.optimizer_step();
        accumulated = 0;
      }
    }
    trial.ok = true;
  } catch (const std::exception& e) {
    trial.error = e.what();
  }
  trial.peak_bytes = memory_stats().peak_bytes;
  if (options_.max_memory_mb &&
      static_cast<double>(trial.peak_bytes) > *options_.max_memory_mb * 1024.0 * 1024.0) {
    trial.ok = false;
  }
  trials_.push_back(trial);
  return trial.ok;
}

int64_t BatchSizeFinder::scale_batch_size(Trainer& trainer, TrainingModule& module) {
  optim::Optimizer* opt = trainer.optimizer();
  ATH_CHECK(opt != nullptr, ValueError,
            "BatchSizeFinder: runs inside fit (it needs the configured optimizer)");
  ATH_CHECK(module.automatic_optimization(), ValueError,
            "BatchSizeFinder: not supported with manual optimization");
  trials_.clear();
  optimal_.reset();
  detail::TrainingSnapshot snapshot(module, *opt);
  std::optional<int64_t> best;
  try {
    int64_t size = options_.init_val;
    int64_t low = 0;              // largest size that worked
    std::optional<int64_t> high;  // smallest size that failed
    for (int64_t t = 0; t < options_.max_trials; ++t) {
      bool whole_epoch = false;
      int64_t largest_batch = 0;
      if (try_size(trainer, module, size, whole_epoch, largest_batch)) {
        low = size;
        best = size;
        if (whole_epoch) {
          // One batch holds the whole epoch: a larger size changes nothing (Lightning caps the
          // size at the dataset's length the same way).
          if (largest_batch > 0) best = std::min(size, largest_batch);
          break;
        }
        if (high) {
          if (*high - low <= 1) break;
          size = (low + *high) / 2;
        } else {
          size *= 2;
        }
      } else {
        high = size;
        if (size <= 1) break;
        // power: halve and stop once something worked; binsearch: bisect.
        if (options_.mode == "power" && best) break;
        size = options_.mode == "power" || !best ? size / 2 : (low + size) / 2;
        if (best && *high - low <= 1) break;
      }
    }
  } catch (...) {
    snapshot.restore();
    throw;
  }
  snapshot.restore();
  if (!best) {
    const Trial& last = trials_.back();
    ATH_CHECK(false, ValueError, "BatchSizeFinder: no batch size worked (last tried {}: {})",
              last.batch_size,
              last.error.empty() ? fmt::format("peak memory {:.1f} MB over the {} MB cap",
                                               static_cast<double>(last.peak_bytes) / 1048576.0,
                                               options_.max_memory_mb.value_or(0))
                                 : last.error);
  }
  optimal_ = best;
  trainer.set_train_source(factory_(*best));
  return *best;
}

}  // namespace ath::train
