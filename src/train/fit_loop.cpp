// The fit loop: sanity check, epochs, training batches (automatic optimization with gradient
// accumulation and clipping), validation scheduling, LR schedulers and stop conditions — in
// Lightning 2.x's order (docs/trainer.md lists it).
#include <algorithm>
#include <cmath>
#include <utility>

#include "athanor/core/error.h"
#include "athanor/train/trainer.h"
#include "compiled_train_step.h"
#include "step_runner.h"
#include "trainer_hooks.h"

namespace ath::train {

namespace {
// Training batches between two validation runs within an epoch.
int64_t val_every(const BatchLimit& interval, int64_t num_batches) {
  if (const auto* n = std::get_if<int64_t>(&interval)) return *n;
  const double f = std::get<double>(interval);
  if (num_batches < 0) return f == 1.0 ? -1 : 0;  // unknown length: only at the epoch end
  return std::max<int64_t>(1,
                           static_cast<int64_t>(std::floor(f * static_cast<double>(num_batches))));
}
}  // namespace

// A stop request (EarlyStopping, Timer, ...) is honoured only once min_epochs epochs and
// min_steps optimizer steps have run, as in Lightning.
bool Trainer::stop_allowed(int64_t epochs_done) const {
  return epochs_done >= options_.min_epochs.value_or(0) &&
         global_step_ >= options_.min_steps.value_or(0);
}

// A monitor naming a metric the module says it never logs is a configuration error, found before
// the first batch rather than at the first epoch's end (Lightning finds it there).
void Trainer::check_monitors() const {
  const std::vector<std::string> known = module_->known_metrics();
  if (known.empty()) return;
  auto check = [&](const std::string& monitor, const std::string& who) {
    if (monitor.empty() || std::find(known.begin(), known.end(), monitor) != known.end()) return;
    ATH_THROW(ValueError, "{}: monitor '{}' is not a metric {} logs (it logs {})", who, monitor,
              module_->type_name(), fmt::join(known, ", "));
  };
  for (const auto& cb : callbacks_) {
    const std::string key = cb->state_key();  // "ModelCheckpoint{'monitor': ...}": the class
    check(cb->monitor(), key.substr(0, key.find('{')));
  }
  for (const LRSchedulerConfig& s : schedulers_) {
    if (s.needs_metric() && s.options().strict) check(s.options().monitor, s.type_name());
  }
}

void Trainer::run_fit(Source train, Source val) {
  check_monitors();
  steps_before_batch_ = global_step_;
  strategy_->prepare_train_source(*train);  // again: on_fit_start may have replaced it
  train_ = train;
  num_train_batches_ =
      resolve_limit(options_.limit_train_batches, train->num_batches(), "limit_train_batches");
  num_val_batches_ =
      val ? resolve_limit(options_.limit_val_batches, val->num_batches(), "limit_val_batches") : 0;
  if (num_val_batches_ == 0) val = nullptr;

  if (val && options_.num_sanity_val_steps != 0) {
    // Catches a broken validation_step before a long epoch; its metrics are thrown away.
    const LoggedMetrics before = metrics_;
    stage_ = Stage::SanityChecking;
    for (const auto& cb : callbacks_) cb->on_sanity_check_start(*this, *module_);
    const int64_t n =
        options_.num_sanity_val_steps < 0
            ? num_val_batches_
            : (num_val_batches_ < 0 ? options_.num_sanity_val_steps
                                    : std::min(options_.num_sanity_val_steps, num_val_batches_));
    run_evaluation(Stage::SanityChecking, val, n);
    for (const auto& cb : callbacks_) cb->on_sanity_check_end(*this, *module_);
    metrics_ = before;
    stage_ = Stage::Fitting;
  }

  ATH_TRAINER_HOOK(on_train_start);
  const int64_t max_ep = max_epochs();
  while (max_ep < 0 || epoch_ < max_ep) {
    if (options_.max_steps >= 0 && global_step_ >= options_.max_steps) break;
    const bool stopped_early = run_train_epoch(train, val);
    if (!epoch_finished_) break;  // stopped inside the epoch: a resume continues it
    ++epoch_;
    epoch_finished_ = false;
    if (stopped_early) break;
    if (should_stop_ && stop_allowed(epoch_)) break;
  }
  // Lightning's closing line, and the same for every other way fit ends.
  if (options_.max_steps >= 0 && global_step_ >= options_.max_steps) {
    fit_stop_reason_ = fmt::format("`max_steps={}` reached.", options_.max_steps);
  } else if (should_stop_) {
    fit_stop_reason_ = stop_reason_.empty() ? "a callback requested a stop." : stop_reason_;
  } else if (options_.max_time_s && elapsed_s() >= *options_.max_time_s) {
    fit_stop_reason_ = "`max_time` reached.";
  } else if (max_ep >= 0 && epoch_ >= max_ep) {
    fit_stop_reason_ = fmt::format("`max_epochs={}` reached.", max_ep);
  }
  if (options_.enable_progress_bar && !fit_stop_reason_.empty()) {
    fmt::print("`Trainer.fit` stopped: {}\n", fit_stop_reason_);
  }
  ATH_TRAINER_HOOK(on_train_end);
}

// Returns whether training must end now (max_steps, max_time, or a stop request honoured).
bool Trainer::run_train_epoch(Source& train, Source& val) {
  metrics_.reset(LogScope::TrainStep);
  const bool overfit = [&] {
    const auto& o = options_.overfit_batches;
    return std::holds_alternative<double>(o) ? std::get<double>(o) > 0.0 : std::get<int64_t>(o) > 0;
  }();
  if (!pending_loader_state_.is_null()) {
    // The dataloader position comes from the checkpoint: a state the loader refuses names it.
    try {
      train->load_state_dict(std::exchange(pending_loader_state_, nullptr));
    } catch (Error& e) {
      e.prepend(fmt::format("checkpoint '{}': dataloader state: ", restored_from_));
      throw;
    } catch (const nlohmann::json::exception& e) {
      ATH_THROW(FormatError, "checkpoint '{}': malformed dataloader state: {}", restored_from_,
                e.what());
    }
  }
  // Overfitting replays epoch 0's batches every epoch.
  train->start_epoch(overfit ? 0 : epoch_);
  module_->train();
  // Rows logged at the epoch's start (LearningRateMonitor's "epoch" interval) count every step
  // so far; from each batch on, the steps before it, through that epoch's end-of-epoch rows.
  steps_before_batch_ = global_step_;
  ATH_TRAINER_HOOK(on_train_epoch_start);

  const bool validate_this_epoch = val && options_.check_val_every_n_epoch &&
                                   (epoch_ + 1) % *options_.check_val_every_n_epoch == 0;
  const int64_t every = val_every(options_.val_check_interval, num_train_batches_);
  const bool int_interval = std::holds_alternative<int64_t>(options_.val_check_interval);
  bool stop = false;
  bool left_batches = false;  // the loop ended before the epoch's last batch

  batch_idx_ = resume_batch_idx_;
  batches_done_ = resume_batch_idx_;
  resume_batch_idx_ = 0;
  while (num_train_batches_ < 0 || batch_idx_ < num_train_batches_) {
    // A checkpoint written while this batch is in flight (OnExceptionCheckpoint, when
    // training_step throws) must resume at this batch, not after it: keep the position the
    // source had before handing it out.
    pre_batch_loader_state_ = train->state_dict();
    std::optional<data::Batch> batch = train->next();
    if (!batch) break;
    in_batch_ = true;
    steps_before_batch_ = global_step_;
    is_last_batch_ = num_train_batches_ >= 0 && batch_idx_ + 1 == num_train_batches_;
    train_batch(*batch, batch_idx_);
    in_batch_ = false;
    ++batch_idx_;
    flush_step_logs();

    const bool max_steps_hit = options_.max_steps >= 0 && global_step_ >= options_.max_steps;
    const bool time_up = options_.max_time_s && elapsed_s() >= *options_.max_time_s;
    // Validation within the epoch (val_check_interval); the epoch-end one comes below, also
    // when training stops early on max_steps (as Lightning validates on its last step).
    if ((validate_this_epoch || (val && int_interval && !options_.check_val_every_n_epoch)) &&
        every > 0 && batch_idx_ % every == 0 && !is_last_batch_ && !max_steps_hit) {
      mid_epoch_validation_ = true;
      run_evaluation(Stage::Validating, val, num_val_batches_);
      mid_epoch_validation_ = false;
      module_->train();
    }
    const bool more = num_train_batches_ < 0 || batch_idx_ < num_train_batches_;
    if (max_steps_hit || time_up) {
      stop = true;
      left_batches = more;
      break;
    }
    if (should_stop_ && stop_allowed(epoch_ + 1)) {
      left_batches = more;
      break;
    }
  }
  if (accumulated_ > 0) {
    // An epoch whose length is not a multiple of accumulate_grad_batches (or of unknown
    // length) still steps on what it accumulated, as Lightning does.
    optimizer_step();
    accumulated_ = 0;
  }
  if (validate_this_epoch && (every < 0 || every > 0)) {
    run_evaluation(Stage::Validating, val, num_val_batches_);
    module_->train();
  }

  // Lightning: non-monitoring callbacks, the module, then the monitoring callbacks
  // (ModelCheckpoint, EarlyStopping), which thus see the epoch's reduced metrics.
  for (const auto& cb : callbacks_) {
    if (!cb->is_monitoring()) cb->on_train_epoch_end(*this, *module_);
  }
  log_scope_ = LogScope::TrainEpoch;
  module_->on_train_epoch_end();
  log_scope_ = LogScope::Other;
  log_epoch_metrics(LogScope::TrainStep);
  // An epoch cut short (max_steps, max_time, a stop request) is not finished: its checkpoint
  // records the next batch and the loader's position, and an epoch-interval scheduler steps
  // only when a resumed run really ends the epoch — so resuming equals the uninterrupted run.
  if (!left_batches) step_schedulers(SchedulerInterval::Epoch);
  epoch_finished_ = !left_batches;
  for (const auto& cb : callbacks_) {
    if (cb->is_monitoring()) cb->on_train_epoch_end(*this, *module_);
  }
  for (const auto& lg : loggers_) lg->save();
  return stop;
}

void Trainer::train_batch(const data::Batch& batch, int64_t batch_idx) {
  current_batch_size_ = batch.size();
  log_scope_ = LogScope::TrainStep;
  ATH_TRAINER_HOOK(on_train_batch_start, batch, batch_idx);
  Tensor loss;
  if (compiled_step_ && module_->automatic_optimization()) {
    // The whole step, compiled (compiled_train_step.h): it checks the loss, zeroes,
    // backpropagates and steps as the branch below does.
    const bool step = accumulated_ + 1 >= accumulate_ || is_last_batch_;
    strategy_->before_backward(step);  // host state, outside the graph (DDP's no_sync)
    loss = compiled_step_->run(batch, batch_idx, accumulated_, accumulate_, step);
    if (loss.defined()) {
      accumulated_ = step ? 0 : accumulated_ + 1;
      if (step) count_optimizer_step();
    }
  } else {
    loss = run_module_step("training_step", batch_idx, train_.get(),
                           [&] { return step_runner_->training_step(batch, batch_idx); });
    if (module_->automatic_optimization() && loss.defined()) {
      step_runner_->check_loss(loss);
      if (options_.detect_anomaly) {
        const double v = loss.item<double>();
        ATH_CHECK(std::isfinite(v), AutogradError,
                  "Trainer (detect_anomaly): training_step returned a non-finite loss ({}) at "
                  "epoch {}, batch {}",
                  v, epoch_, batch_idx);
      }
      strategy_->before_backward(accumulated_ + 1 >= accumulate_ || is_last_batch_);
      step_runner_->backward(loss, accumulated_, accumulate_);
      ++accumulated_;
      if (accumulated_ >= accumulate_ || is_last_batch_) {
        optimizer_step();
        accumulated_ = 0;
      }
    } else if (!module_->automatic_optimization()) {
      // Manual optimization: the module steps its optimizer itself; Lightning counts those
      // steps, athanor counts one per training batch.
      ++global_step_;
      step_schedulers(SchedulerInterval::Step);
    }
  }
  batches_done_ = batch_idx + 1;
  in_batch_ = false;  // the batch is complete: checkpoints from here on resume after it
  ATH_TRAINER_HOOK(on_train_batch_end, loss, batch, batch_idx);
  log_scope_ = LogScope::Other;
}

void Trainer::optimizer_step() {
  step_runner_->optimizer_step();
  count_optimizer_step();
}

void Trainer::count_optimizer_step() {
  ++global_step_;
  // Step-interval schedulers step right after the optimizer (Lightning: after
  // on_train_batch_end), so a checkpoint taken in on_train_batch_end holds the stepped state.
  step_schedulers(SchedulerInterval::Step);
}

void Trainer::step_schedulers(SchedulerInterval interval) {
  for (auto& s : schedulers_) {
    const auto& o = s.options();
    if (o.interval != interval) continue;
    const int64_t count = interval == SchedulerInterval::Step ? global_step_ : epoch_ + 1;
    if (count % o.frequency != 0) continue;
    if (!s.needs_metric()) {
      s.step();
      continue;
    }
    const auto& cm = metrics_.callback_metrics();
    auto it = cm.find(o.monitor);
    if (it == cm.end()) {
      std::string available;
      for (const auto& [k, v] : cm) available += (available.empty() ? "" : ", ") + k;
      ATH_CHECK(!o.strict, KeyError,
                "Trainer: ReduceLROnPlateau monitors '{}', which was not logged (available: {}); "
                "log it or set strict = false",
                o.monitor, available.empty() ? "none" : available);
      continue;
    }
    s.step(it->second);
  }
}

}  // namespace ath::train
