// BatchSizeFinder (see the header): Lightning's _run_power_scaling / _run_binary_scaling with
// "out of memory" redefined for the CPU.
#include "athanor/train/callbacks/batch_size_finder.h"

#include <fmt/format.h>

#include "../step_runner.h"
#include "athanor/core/allocator.h"
#include "athanor/core/error.h"
#include "athanor/graph/estimate_memory.h"
#include "athanor/graph/interop.h"
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
  ATH_CHECK(!o.from_memory_plan || o.max_memory_mb, ValueError,
            "BatchSizeFinder: from_memory_plan predicts the largest size under max_memory_mb; "
            "set max_memory_mb too");
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

const BatchSizeFinder::Trial& BatchSizeFinder::plan_size(Trainer& trainer, TrainingModule& module,
                                                         int64_t size, bool& whole_epoch,
                                                         int64_t& batch_length) {
  std::shared_ptr<data::BatchSource> source = factory_(size);
  ATH_CHECK(source != nullptr, ValueError,
            "BatchSizeFinder: the factory returned no source for batch size {}", size);
  whole_epoch = source->num_batches() >= 0 && source->num_batches() <= 1;
  source->start_epoch(0);
  std::optional<data::Batch> batch = source->next();
  ATH_CHECK(batch.has_value(), ValueError,
            "BatchSizeFinder: the source for batch size {} yields no batches", size);
  batch_length = batch->size();
  std::vector<Tensor> arguments;
  uint64_t key = 0;
  std::string unbindable;
  graph::collect_argument(*batch, arguments, key, unbindable);
  ATH_CHECK(unbindable.empty(), ValueError, "BatchSizeFinder (from_memory_plan): {}", unbindable);
  module.train();
  StepRunner runner(trainer, module);
  auto step = [&]() -> std::vector<Tensor> {
    Tensor loss = runner.training_step(*batch, 0);
    ATH_CHECK(loss.defined(), ValueError,
              "BatchSizeFinder (from_memory_plan): training_step returned no loss");
    runner.backward(loss, 0, 1);
    runner.optimizer_step();
    return {loss};
  };
  // One step first, untraced: state the optimizer makes on its first step is then state in the
  // plan, not buffers of the traced step. The peak measured over the traced step anchors the
  // prediction (it counts what the process holds besides the step: the data, other models).
  step();
  // The inter-op schedule's cost model is measured once per process (GEMM and add operands of a
  // few MB, freed at once): measured now, before the peak is reset, it is not counted as the
  // traced step's.
  (void)graph::calibrated_interop_costs();
  reset_peak_memory_stats();
  const graph::MemoryPlan plan = graph::estimate_memory_of(step, arguments);
  Trial trial{.batch_size = size,
              .peak_bytes = memory_stats().peak_bytes,
              .planned_bytes = plan.total_bytes(),
              .traced = true};
  trial.ok = static_cast<double>(trial.planned_bytes) <= *options_.max_memory_mb * 1048576.0;
  trials_.push_back(trial);
  return trials_.back();
}

std::optional<int64_t> BatchSizeFinder::search_by_plan(Trainer& trainer, TrainingModule& module) {
  const double cap = *options_.max_memory_mb * 1048576.0;
  bool whole_epoch = false;
  int64_t length1 = 0, length2 = 0;
  const Trial first = plan_size(trainer, module, options_.init_val, whole_epoch, length1);
  int64_t size = length1;
  double per_sample = 0;  // planned bytes per sample of the batch
  if (!whole_epoch) {
    const Trial second = plan_size(trainer, module, 2 * options_.init_val, whole_epoch, length2);
    size = length2;
    if (length2 > length1) {
      per_sample = static_cast<double>(second.planned_bytes - first.planned_bytes) /
                   static_cast<double>(length2 - length1);
    }
  }
  // The peak at a size, predicted: the plans' growth, anchored on the peak measured over the
  // first traced step (what the process holds besides the step is in it).
  const double fixed =
      static_cast<double>(first.peak_bytes) - per_sample * static_cast<double>(length1);
  if (per_sample > 0) {
    size = static_cast<int64_t>((cap - fixed) / per_sample);
    if (whole_epoch) size = std::min(size, length2);  // no batch is larger than the data
    size = std::max<int64_t>(size, 1);
  }
  for (int64_t t = 0; t < options_.max_trials; ++t) {
    bool trial_whole_epoch = false;
    int64_t largest_batch = 0;
    const bool ok = try_size(trainer, module, size, trial_whole_epoch, largest_batch);
    trials_.back().planned_bytes =
        static_cast<int64_t>(fixed + per_sample * static_cast<double>(size));
    if (ok) return trial_whole_epoch && largest_batch > 0 ? std::min(size, largest_batch) : size;
    if (size <= 1) break;
    size = std::min(size - 1, static_cast<int64_t>(static_cast<double>(size) * 0.9));
  }
  return std::nullopt;
}

std::optional<int64_t> BatchSizeFinder::search_by_trials(Trainer& trainer, TrainingModule& module) {
  std::optional<int64_t> best;
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
  return best;
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
    best = options_.from_memory_plan ? search_by_plan(trainer, module)
                                     : search_by_trials(trainer, module);
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
