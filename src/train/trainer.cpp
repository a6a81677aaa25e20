// Trainer: construction, the public entry points (fit/validate/test/predict), run set-up and
// teardown, logging plumbing. The loops are in fit_loop.cpp and eval_loop.cpp, checkpoints in
// trainer_checkpoint.cpp.
#include "athanor/train/trainer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "athanor/core/error.h"
#include "athanor/core/rng.h"
#include "athanor/graph/tracer.h"
#include "athanor/train/callbacks/model_checkpoint.h"
#include "athanor/train/callbacks/model_summary.h"
#include "athanor/train/default_loggers.h"
#include "athanor/train/mixed_precision.h"
#include "compiled_train_step.h"
#include "step_runner.h"
#include "trainer_hooks.h"

namespace ath::train {

namespace {
void check_limit(const BatchLimit& limit, const char* what) {
  if (const auto* f = std::get_if<double>(&limit)) {
    ATH_CHECK(*f >= 0.0 && *f <= 1.0, ValueError,
              "Trainer: {} as a fraction must be in [0, 1], got {} (use an integer for a count)",
              what, *f);
  } else {
    ATH_CHECK(std::get<int64_t>(limit) >= 0, ValueError, "Trainer: {} must be >= 0, got {}", what,
              std::get<int64_t>(limit));
  }
}

bool is_zero(const BatchLimit& limit) {
  if (const auto* f = std::get_if<double>(&limit)) return *f == 0.0;
  return std::get<int64_t>(limit) == 0;
}
}  // namespace

Trainer::Trainer(TrainerOptions options) : options_(std::move(options)) {
  const auto& o = options_;
  ATH_CHECK(!o.max_epochs || *o.max_epochs >= -1, ValueError,
            "Trainer: max_epochs must be >= -1 (-1: no limit), got {}", *o.max_epochs);
  ATH_CHECK(o.max_steps >= -1, ValueError, "Trainer: max_steps must be >= -1, got {}", o.max_steps);
  ATH_CHECK(!o.max_time_s || *o.max_time_s > 0, ValueError,
            "Trainer: max_time must be positive, got {} s", o.max_time_s.value_or(0));
  ATH_CHECK(o.accumulate_grad_batches >= 1, ValueError,
            "Trainer: accumulate_grad_batches must be >= 1, got {}", o.accumulate_grad_batches);
  ATH_CHECK(o.gradient_clip_algorithm == "norm" || o.gradient_clip_algorithm == "value", ValueError,
            "Trainer: gradient_clip_algorithm must be 'norm' or 'value', got '{}'",
            o.gradient_clip_algorithm);
  ATH_CHECK(!o.gradient_clip_val || *o.gradient_clip_val >= 0, ValueError,
            "Trainer: gradient_clip_val must be >= 0, got {}", o.gradient_clip_val.value_or(0));
  ATH_CHECK(o.log_every_n_steps >= 1, ValueError, "Trainer: log_every_n_steps must be >= 1, got {}",
            o.log_every_n_steps);
  ATH_CHECK(o.num_sanity_val_steps >= -1, ValueError,
            "Trainer: num_sanity_val_steps must be >= -1, got {}", o.num_sanity_val_steps);
  ATH_CHECK(o.fast_dev_run >= 0, ValueError, "Trainer: fast_dev_run must be >= 0, got {}",
            o.fast_dev_run);
  ATH_CHECK(!o.check_val_every_n_epoch || *o.check_val_every_n_epoch >= 1, ValueError,
            "Trainer: check_val_every_n_epoch must be >= 1, got {}",
            o.check_val_every_n_epoch.value_or(0));
  check_limit(o.limit_train_batches, "limit_train_batches");
  check_limit(o.limit_val_batches, "limit_val_batches");
  check_limit(o.limit_test_batches, "limit_test_batches");
  check_limit(o.limit_predict_batches, "limit_predict_batches");
  check_limit(o.overfit_batches, "overfit_batches");
  if (const auto* f = std::get_if<double>(&o.val_check_interval)) {
    ATH_CHECK(*f > 0.0 && *f <= 1.0, ValueError,
              "Trainer: val_check_interval as a fraction must be in (0, 1], got {}", *f);
  } else {
    ATH_CHECK(std::get<int64_t>(o.val_check_interval) >= 1, ValueError,
              "Trainer: val_check_interval must be >= 1 batches, got {}",
              std::get<int64_t>(o.val_check_interval));
  }
  for (const auto& cb : o.callbacks) {
    ATH_CHECK(cb != nullptr, ValueError, "Trainer: a callback is null");
  }
  if (o.fast_dev_run > 0) {
    // Lightning's fast_dev_run: a smoke test of every code path, writing nothing.
    options_.max_epochs = 1;
    options_.max_steps = o.fast_dev_run;
    options_.limit_train_batches = o.fast_dev_run;
    options_.limit_val_batches = o.fast_dev_run;
    options_.limit_test_batches = o.fast_dev_run;
    options_.limit_predict_batches = o.fast_dev_run;
    options_.num_sanity_val_steps = 0;
    options_.logger = false;
    options_.loggers.clear();
    options_.enable_checkpointing = false;
  }
  if (o.barebones) {
    options_.enable_progress_bar = false;
    options_.enable_model_summary = false;
    options_.enable_checkpointing = false;
    options_.logger = false;
    options_.loggers.clear();
  }
  if (!is_zero(o.overfit_batches)) {
    options_.limit_train_batches = o.overfit_batches;
    options_.limit_val_batches = o.overfit_batches;
  }
  callbacks_ = options_.callbacks;
  loggers_ = options_.loggers;
  accumulate_ = options_.accumulate_grad_batches;
  precision_ =
      options_.precision_plugin ? options_.precision_plugin : make_precision(options_.precision);
  strategy_ =
      options_.strategy.object ? options_.strategy.object : make_strategy(options_.strategy.name);
  // log(..., sync_dist = true) reduces through the strategy (the Trainer owns both).
  metrics_.set_rank_reducer([strategy = strategy_.get()](const std::vector<double>& values,
                                                         Reduce op, const std::string& name) {
    return strategy->reduce(values, op, name);
  });
}

Trainer::~Trainer() = default;

int64_t Trainer::max_epochs() const {
  if (options_.max_epochs) return *options_.max_epochs;
  return options_.max_steps == -1 ? 1000 : -1;
}

void Trainer::set_accumulate_grad_batches(int64_t n) {
  ATH_CHECK(n >= 1, ValueError, "Trainer: accumulate_grad_batches must be >= 1, got {}", n);
  accumulate_ = n;
}

int64_t Trainer::estimated_stepping_batches() const {
  const int64_t epochs = max_epochs();
  int64_t total = -1;
  if (num_train_batches_ >= 0 && epochs >= 0) {
    total = (num_train_batches_ + accumulate_ - 1) / accumulate_ * epochs;
  }
  if (options_.max_steps >= 0)
    total = total < 0 ? options_.max_steps : std::min(total, options_.max_steps);
  return total;
}

void Trainer::set_train_source(Source source) {
  ATH_CHECK(source != nullptr, ValueError, "Trainer::set_train_source: the source is null");
  train_ = std::move(source);
}

double Trainer::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - fit_start_).count();
}

std::string Trainer::log_dir() const {
  for (const auto& lg : loggers_) {
    std::string d = lg->log_dir();
    if (!d.empty()) return d;
  }
  return options_.default_root_dir;
}

void Trainer::configure_defaults() {
  if (configured_) return;
  configured_ = true;
  if (!is_global_zero()) {
    loggers_.clear();  // logs are rank 0's to write (Lightning's rank_zero_only)
  } else if (options_.logger && loggers_.empty()) {
    loggers_ = make_default_loggers(options_.default_root_dir);
  }
  auto has = [&](auto* probe) {
    using C = std::remove_pointer_t<decltype(probe)>;
    for (const auto& cb : callbacks_) {
      if (dynamic_cast<C*>(cb.get()) != nullptr) return true;
    }
    return false;
  };
  if (options_.enable_model_summary && !has(static_cast<ModelSummary*>(nullptr))) {
    callbacks_.insert(callbacks_.begin(), std::make_shared<ModelSummary>());
  }
  if (is_global_zero()) add_default_progress_bar(*this, callbacks_);
  if (options_.enable_checkpointing && !has(static_cast<ModelCheckpoint*>(nullptr))) {
    callbacks_.push_back(std::make_shared<ModelCheckpoint>());
  }
  // State keys identify callback states in checkpoints: two callbacks sharing one would
  // silently restore each other's state.
  std::vector<std::string> keys;
  for (const auto& cb : callbacks_) {
    std::string key = cb->state_key();
    for (const auto& k : keys) {
      ATH_CHECK(k != key, ValueError,
                "Trainer: two callbacks have the state key '{}'; give them different "
                "options (or override state_key) so checkpoints can tell them apart",
                key);
    }
    keys.push_back(std::move(key));
  }
}

void Trainer::setup_run(TrainingModule& module, Stage stage) {
  ATH_CHECK(stage_ == Stage::None, ValueError,
            "Trainer: fit/validate/test/predict called while another run is in progress");
  module_ = &module;
  module.trainer_ = this;
  stage_ = stage;
  restored_from_.clear();
  in_fit_ = stage == Stage::Fitting;
  should_stop_ = false;
  stop_reason_.clear();
  fit_stop_reason_.clear();
  configure_defaults();
  precision_->convert_module(module);  // bf16-true: before configure_optimizers sees parameters
}

void Trainer::teardown_run(const std::string& stage_name, const std::string& status) {
  if (module_ != nullptr) {
    // Teardown must run even after a failure; a second failure there must not hide the first.
    try {
      ATH_TRAINER_HOOK(teardown, stage_name);
      if (datamodule_ != nullptr) datamodule_->teardown(stage_name);
    } catch (...) {
      if (status == "success") throw;
    }
    module_->trainer_ = nullptr;
  }
  for (const auto& lg : loggers_) lg->finalize(status);
  stage_ = Stage::None;
  in_fit_ = false;
  datamodule_ = nullptr;
}

void Trainer::log_from_module(const std::string& name, double value, const LogOptions& options) {
  if (log_capture_ != nullptr) {
    graph::Tracer::fail_active(fmt::format(
        "log('{}') of a number inside the compiled training step: a replay would not log it "
        "(log a tensor instead)",
        name));
  }
  if (options_.barebones || stage_ == Stage::Predicting) return;
  metrics_.log(name, value, options, log_scope_, current_batch_size_);
}

void Trainer::log_tensor_from_module(const std::string& name, const Tensor& value,
                                     const LogOptions& options) {
  if (options_.barebones || stage_ == Stage::Predicting) return;
  if (log_capture_ != nullptr) {
    log_capture_->push_back({name, options, value.detach()});
    return;
  }
  metrics_.log(name, value.item<double>(), options, log_scope_, current_batch_size_);
}

const CompileStats* Trainer::compile_stats() const {
  return compiled_step_ ? &compiled_step_->stats() : nullptr;
}

void Trainer::log_to_loggers(const Metrics& metrics) {
  if (metrics.empty() || stage_ == Stage::SanityChecking) return;
  // Lightning's step column (its _batches_that_stepped): inside fit, the optimizer steps taken
  // before the current (or last) training batch, whether the batch logs before its step
  // (LearningRateMonitor) or after it; so the 50th batch's rows, and that epoch's validation
  // and epoch rows, say 49. Outside fit (validate/test), the steps taken so far.
  const int64_t step = in_fit_ ? steps_before_batch_ : global_step_;
  for (const auto& lg : loggers_) lg->log_metrics(metrics, step);
}

void Trainer::flush_step_logs() {
  Metrics step = metrics_.take_step_logs();
  // Lightning logs step values every log_every_n_steps optimizer steps, once per step.
  if (step.empty() || global_step_ % options_.log_every_n_steps != 0 ||
      global_step_ == last_logged_step_) {
    return;
  }
  last_logged_step_ = global_step_;
  step["epoch"] = static_cast<double>(epoch_);
  log_to_loggers(step);
}

void Trainer::log_epoch_metrics(LogScope scope) {
  Metrics m = metrics_.end_epoch(scope);
  if (m.empty()) return;
  m["epoch"] = static_cast<double>(epoch_);
  log_to_loggers(m);
}

int64_t Trainer::resolve_limit(const BatchLimit& limit, int64_t available, const char* what) const {
  if (const auto* count = std::get_if<int64_t>(&limit)) {
    return available < 0 ? *count : std::min(*count, available);
  }
  const double f = std::get<double>(limit);
  if (available < 0) {
    ATH_CHECK(f == 1.0 || f == 0.0, ValueError,
              "Trainer: {} is a fraction ({}) but the dataloader's length is unknown; give a "
              "batch count instead",
              what, f);
    return f == 0.0 ? 0 : -1;
  }
  // Lightning rounds down but keeps at least one batch for a non-zero fraction.
  const auto n = static_cast<int64_t>(std::floor(f * static_cast<double>(available)));
  return f > 0.0 ? std::max<int64_t>(n, available > 0 ? 1 : 0) : 0;
}

void Trainer::fit(TrainingModule& module, Source train, Source val, const std::string& ckpt_path) {
  fit_impl(module, std::move(train), std::move(val), ckpt_path, nullptr);
}

void Trainer::fit(TrainingModule& module, DataModule& data, const std::string& ckpt_path) {
  data.prepare_data();
  data.setup("fit");
  auto train = data.train_dataloader();
  ATH_CHECK(train != nullptr, ValueError,
            "Trainer::fit: the DataModule's train_dataloader() returned nothing");
  fit_impl(module, std::move(train), data.val_dataloader(), ckpt_path, &data);
}

void Trainer::fit_impl(TrainingModule& module, Source train, Source val,
                       const std::string& ckpt_path, DataModule* data) {
  ATH_CHECK(train != nullptr, ValueError, "Trainer::fit: no training dataloader was given");
  setup_run(module, Stage::Fitting);
  datamodule_ = data;
  strategy_->prepare_train_source(*train);
  train_ = train;  // callbacks may read it from on_fit_start (the LR finder does)
  fit_start_ = std::chrono::steady_clock::now();
  try {
    if (options_.seed) manual_seed(*options_.seed);
    ATH_TRAINER_HOOK(setup, std::string("fit"));
    // Known before configure_optimizers, so schedulers can size themselves
    // (estimated_stepping_batches), as in Lightning.
    num_train_batches_ =
        resolve_limit(options_.limit_train_batches, train->num_batches(), "limit_train_batches");
    OptimizerConfig cfg = module.configure_optimizers();
    ATH_CHECK(cfg.optimizer != nullptr, ValueError,
              "Trainer::fit: configure_optimizers returned no optimizer");
    optimizer_ = cfg.optimizer;
    strategy_->setup(module, *optimizer_);
    step_runner_ = std::make_unique<StepRunner>(
        *this, module,
        StepHooks{
            .on_before_zero_grad =
                [this](optim::Optimizer& opt) {
                  step_hook_calls_ += static_cast<int64_t>(callbacks_.size()) + 1;
                  ATH_TRAINER_HOOK(on_before_zero_grad, opt);
                },
            .on_before_backward =
                [this](const Tensor& loss) {
                  step_hook_calls_ += static_cast<int64_t>(callbacks_.size()) + 1;
                  ATH_TRAINER_HOOK(on_before_backward, loss);
                },
            .on_after_backward =
                [this] {
                  step_hook_calls_ += static_cast<int64_t>(callbacks_.size()) + 1;
                  ATH_TRAINER_HOOK(on_after_backward);
                },
            .on_before_optimizer_step =
                [this](optim::Optimizer& opt) {
                  step_hook_calls_ += static_cast<int64_t>(callbacks_.size()) + 1;
                  ATH_TRAINER_HOOK(on_before_optimizer_step, opt);
                },
        });
    compiled_step_.reset();
    if (options_.compile) {
      if (options_.detect_anomaly) {
        std::fprintf(stderr,
                     "athanor compile: running eagerly: detect_anomaly reads every loss on the "
                     "host\n");
      } else {
        // A data-parallel strategy reduces gradients outside the graph: split the step there.
        compiled_step_ = std::make_unique<CompiledTrainStep>(*this, *step_runner_,
                                                             strategy_->name() != "single_device");
      }
    }
    schedulers_.clear();
    if (cfg.lr_scheduler) schedulers_.push_back(*cfg.lr_scheduler);
    epoch_ = 0;
    global_step_ = 0;
    resume_batch_idx_ = 0;
    accumulated_ = 0;
    last_logged_step_ = -1;
    pending_loader_state_ = nullptr;
    if (!ckpt_path.empty()) restore(ckpt_path, /*full=*/true);
    nlohmann::json hp = module.hparams();
    if (datamodule_ != nullptr && !datamodule_->hparams().empty()) {
      hp["datamodule"] = datamodule_->hparams();
    }
    for (const auto& lg : loggers_) lg->log_hyperparams(hp);
    ATH_TRAINER_HOOK(on_fit_start);
    run_fit(train_, val);  // on_fit_start may have replaced it (set_train_source)
    ATH_TRAINER_HOOK(on_fit_end);
  } catch (const std::exception& e) {
    for (const auto& cb : callbacks_) {
      try {
        cb->on_exception(*this, module, e);
      } catch (...) {
        // The original failure is what the user must see.
      }
    }
    teardown_run("fit", "failed");
    throw;
  }
  teardown_run("fit", "success");
}

}  // namespace ath::train
