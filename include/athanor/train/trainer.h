// Trainer: Lightning's Trainer for C++. Give it a TrainingModule and data; it runs the loop —
// epochs, batches, validation, gradient accumulation and clipping, LR schedulers, logging,
// checkpoints, exact resume — and calls every hook in Lightning's order.
//
//   #include "athanor/data/data.h"
//   #include "athanor/nn/linear.h"
//   #include "athanor/train/callbacks/model_checkpoint.h"
//   #include "athanor/train/tasks.h"
//   auto net = std::make_shared<nn::Linear>(nn::LinearOptions{.in = 4, .out = 3});
//   train::ClassificationTask model(net, {.name = "sgd", .lr = 0.1});  // a TrainingModule
//   auto ds = std::make_shared<data::TensorDataset>(
//       data::TensorList{randn({32, 4}), randint(0, 3, {32})});  // 4 features, 3 classes
//   auto train_loader = data::make_loader(ds, {.batch_size = 8, .shuffle = true});
//   auto val_loader = data::make_loader(ds, {.batch_size = 16}), test_loader = val_loader;
//
//   train::TrainerOptions opts;
//   opts.max_epochs = 1;
//   opts.callbacks = {std::make_shared<train::ModelCheckpoint>(train::ModelCheckpointOptions{
//       .monitor = "val_loss", .save_last = true})};
//   train::Trainer trainer(opts);
//   trainer.fit(model, train_loader, val_loader);     // or fit(model, datamodule)
//   trainer.fit(model, train_loader, val_loader, "last");   // resume where the last run stopped
//   auto results = trainer.test(model, test_loader);   // [{"test_acc": 0.41, ...}]
//   assert(results[0].contains("test_acc"));
//
// Options have Lightning's names and meanings; docs/trainer.md lists them and the hook order.
// global_step counts optimizer steps. Checkpoints resume bit-exactly, mid-epoch included.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "athanor/data/batch_source.h"
#include "athanor/train/callback.h"
#include "athanor/train/data_module.h"
#include "athanor/train/logged_metrics.h"
#include "athanor/train/logger.h"
#include "athanor/train/precision.h"
#include "athanor/train/strategy.h"
#include "athanor/train/training_module.h"

namespace ath {
struct CompileStats;  // graph/compile.h
}  // namespace ath

namespace ath::train {

// A batch limit: a count of batches (int) or a fraction of the epoch (double in [0, 1]).
using BatchLimit = std::variant<int64_t, double>;

struct TrainerOptions {
  std::optional<int64_t> max_epochs;  // default: 1000 when max_steps is -1 (Lightning's rule)
  std::optional<int64_t> min_epochs;  // early stopping is ignored before this many epochs
  int64_t max_steps = -1;             // optimizer steps; -1: no limit
  std::optional<int64_t> min_steps;   // early stopping is ignored before this many steps
  std::optional<double> max_time_s;   // wall-clock budget for fit, checked after each batch
  BatchLimit limit_train_batches = 1.0;
  BatchLimit limit_val_batches = 1.0;
  BatchLimit limit_test_batches = 1.0;
  BatchLimit limit_predict_batches = 1.0;
  BatchLimit val_check_interval = 1.0;  // fraction of an epoch, or every N training batches
  std::optional<int64_t> check_val_every_n_epoch = 1;  // nullopt with an int val_check_interval
  int64_t num_sanity_val_steps = 2;                    // -1: the whole validation set
  int64_t accumulate_grad_batches = 1;
  std::optional<double> gradient_clip_val;
  std::string gradient_clip_algorithm = "norm";  // "norm" or "value"
  bool deterministic = false;        // athanor's CPU kernels are deterministic either way
  std::optional<uint64_t> seed;      // seed_everything before fit
  int64_t fast_dev_run = 0;          // N > 0: N train/val batches, one epoch, no logs/checkpoints
  BatchLimit overfit_batches = 0.0;  // > 0: train and validate on the same first batches
  int64_t log_every_n_steps = 50;
  std::string default_root_dir = ".";
  bool enable_checkpointing = true;  // adds a ModelCheckpoint (last epoch) if none is given
  bool enable_progress_bar = true;
  bool enable_model_summary = true;
  bool logger = true;  // with no `loggers`: CSVLogger + HTML report under default_root_dir
  std::vector<std::shared_ptr<Callback>> callbacks;
  std::vector<std::shared_ptr<Logger>> loggers;
  bool detect_anomaly = false;  // NaN/Inf in a gradient or the loss stops with the op's name
  // Compile the training step (graph/compile.h): zero_grad, training_step, backward, clipping
  // and the optimizer step become one replayed graph per batch shape. Steps that cannot be
  // replayed faithfully run eagerly, with a one-line diagnostic: see docs/compiler.md.
  bool compile = false;
  bool barebones = false;  // no progress bar, summary, loggers, checkpoints or log() cost
  // Lightning's `precision`: "32-true", "bf16-mixed", "16-mixed", "bf16-true" or "16-true"
  // (mixed_precision.h). A precision_plugin, when given, is used instead.
  std::string precision = "32-true";
  // Lightning's plugins: null means the plugin `precision` names. See precision.h.
  std::shared_ptr<PrecisionPlugin> precision_plugin;
  // Lightning's `strategy`: "auto" (one process), "ddp" (data-parallel over the processes of
  // dist::world(), one per rank under mpirun: ddp_strategy.h) or a Strategy object.
  StrategyChoice strategy;
};

class StepRunner;
class CompiledTrainStep;
struct CapturedLog;

enum class Stage { None, Fitting, SanityChecking, Validating, Testing, Predicting };

class Trainer {
 public:
  explicit Trainer(TrainerOptions options = {});
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  using Source = std::shared_ptr<data::BatchSource>;

  // ckpt_path: "" (fresh start), "last", "best" (ModelCheckpoint's) or a file path.
  void fit(TrainingModule& module, Source train, Source val = nullptr,
           const std::string& ckpt_path = "");
  void fit(TrainingModule& module, DataModule& data, const std::string& ckpt_path = "");
  // One entry per dataloader (one here): the epoch-level metrics the steps logged.
  std::vector<Metrics> validate(TrainingModule& module, Source val,
                                const std::string& ckpt_path = "");
  std::vector<Metrics> validate(TrainingModule& module, DataModule& data,
                                const std::string& ckpt_path = "");
  std::vector<Metrics> test(TrainingModule& module, Source test, const std::string& ckpt_path = "");
  std::vector<Metrics> test(TrainingModule& module, DataModule& data,
                            const std::string& ckpt_path = "");
  std::vector<Tensor> predict(TrainingModule& module, Source predict,
                              const std::string& ckpt_path = "");

  // --- state, for callbacks and modules -----------------------------------------------
  const TrainerOptions& options() const { return options_; }
  Stage stage() const { return stage_; }
  bool sanity_checking() const { return stage_ == Stage::SanityChecking; }
  bool fitting() const { return in_fit_; }  // inside fit (its validation runs included)
  int64_t current_epoch() const { return epoch_; }
  int64_t global_step() const { return global_step_; }
  int64_t batch_idx() const { return batch_idx_; }  // within the current training epoch
  bool is_last_batch() const { return is_last_batch_; }
  // True during a validation run inside a training epoch (val_check_interval), not the
  // epoch-end one.
  bool validating_mid_epoch() const { return mid_epoch_validation_; }
  int64_t num_training_batches() const { return num_train_batches_; }
  int64_t num_val_batches() const { return num_val_batches_; }
  // Batches the current (or last) test / predict run takes; -1: unknown (an iterable source).
  int64_t num_test_batches() const { return num_test_batches_; }
  int64_t num_predict_batches() const { return num_predict_batches_; }
  int64_t max_epochs() const;
  const Metrics& callback_metrics() const { return metrics_.callback_metrics(); }
  const Metrics& progress_bar_metrics() const { return metrics_.progress_bar_metrics(); }
  // Stops fit at the end of the current batch/epoch (respecting min_epochs). `reason` (the
  // first one given) ends the "`Trainer.fit` stopped: ..." line fit prints.
  void request_stop(const std::string& reason = {}) {
    if (!should_stop_ || stop_reason_.empty()) stop_reason_ = reason;
    should_stop_ = true;
  }
  bool should_stop() const { return should_stop_; }
  // Why the last fit ended, as printed: "`max_epochs=3` reached.", "EarlyStopping: ...".
  const std::string& fit_stop_reason() const { return fit_stop_reason_; }
  int64_t accumulate_grad_batches() const { return accumulate_; }
  void set_accumulate_grad_batches(int64_t n);  // GradientAccumulationScheduler
  double elapsed_s() const;                     // since fit began
  // Optimizer steps fit will take (-1 if unknown): for OneCycleLR-style schedules, available
  // from configure_optimizers on.
  int64_t estimated_stepping_batches() const;

  TrainingModule* module() const { return module_; }
  optim::Optimizer* optimizer() const { return optimizer_.get(); }
  PrecisionPlugin& precision() const { return *precision_; }
  Strategy& strategy() const { return *strategy_; }
  // Checkpoints, logs and the progress bar are written by global rank 0 only.
  bool is_global_zero() const { return strategy_->is_global_zero(); }
  std::vector<LRSchedulerConfig>& lr_schedulers() { return schedulers_; }
  const std::vector<std::shared_ptr<Callback>>& callbacks() const { return callbacks_; }
  const std::vector<std::shared_ptr<Logger>>& loggers() const { return loggers_; }
  // The first logger's directory, or default_root_dir without loggers.
  std::string log_dir() const;
  const Source& train_source() const { return train_; }
  // The checkpoint file the last fit/validate/test/predict loaded ("last" and "best" resolved);
  // "" when it started from the module as it was.
  const std::string& restored_checkpoint() const { return restored_from_; }
  // Replaces fit's training source (BatchSizeFinder does, with one built for the batch size it
  // found). Takes effect only before training starts: call it from setup or on_fit_start.
  void set_train_source(Source source);

  // Writes a checkpoint of the current state (atomically). weights_only: the module's
  // state_dict and the metadata only.
  void save_checkpoint(const std::string& path, bool weights_only = false);

  // Used by TrainingModule::log (the scope follows the running hook).
  void log_from_module(const std::string& name, double value, const LogOptions& options);
  // log() of a tensor: read now, or — inside a compiled step — kept as an output of the step's
  // graph and read once the step has run.
  void log_tensor_from_module(const std::string& name, const Tensor& value,
                              const LogOptions& options);
  // The compiled training step's counters (traces, replays, fallbacks and their diagnostics);
  // null unless fit runs with compile = true.
  const CompileStats* compile_stats() const;
  // Logs metrics to every logger at the current step (LearningRateMonitor, throughput, ...).
  void log_to_loggers(const Metrics& metrics);

 private:
  void fit_impl(TrainingModule& module, Source train, Source val, const std::string& ckpt_path,
                DataModule* data);
  std::vector<Metrics> evaluate_impl(TrainingModule& module, Stage stage, Source source,
                                     const std::string& ckpt_path, DataModule* data);
  void setup_run(TrainingModule& module, Stage stage);
  void teardown_run(const std::string& stage_name, const std::string& status);
  void configure_defaults();
  void restore(const std::string& ckpt_path, bool full);
  std::string resolve_checkpoint(const std::string& ckpt_path) const;
  void run_fit(Source train, Source val);
  void check_monitors() const;
  bool stop_allowed(int64_t epochs_done) const;
  bool run_train_epoch(Source& train, Source& val);
  void train_batch(const data::Batch& batch, int64_t batch_idx);
  void optimizer_step();
  void count_optimizer_step();  // the step counter and step-interval schedulers
  void step_schedulers(SchedulerInterval interval);
  Metrics run_evaluation(Stage stage, Source source, int64_t limit);
  int64_t resolve_limit(const BatchLimit& limit, int64_t available, const char* what) const;
  void flush_step_logs();
  void log_epoch_metrics(LogScope scope);

  template <class F, class G>
  void call_hooks(F&& callback_hook, G&& module_hook);

  TrainerOptions options_;
  std::vector<std::shared_ptr<Callback>> callbacks_;
  std::vector<std::shared_ptr<Logger>> loggers_;
  TrainingModule* module_ = nullptr;
  DataModule* datamodule_ = nullptr;
  std::shared_ptr<optim::Optimizer> optimizer_;
  std::shared_ptr<PrecisionPlugin> precision_;
  std::shared_ptr<Strategy> strategy_;
  std::unique_ptr<StepRunner> step_runner_;           // fit's steps, made once the optimizer exists
  std::unique_ptr<CompiledTrainStep> compiled_step_;  // with options_.compile, made alongside
  std::vector<CapturedLog>* log_capture_ = nullptr;   // set while a compiled step traces
  int64_t step_hook_calls_ = 0;  // step-hook calls made, per object called (step_hook_probe.h)
  friend class CompiledTrainStep;
  std::vector<LRSchedulerConfig> schedulers_;
  LoggedMetrics metrics_;
  LogScope log_scope_ = LogScope::Other;
  int64_t current_batch_size_ = 0;
  Source train_;
  bool epoch_finished_ = false;
  bool mid_epoch_validation_ = false;
  bool in_batch_ = false;  // between pulling a training batch and finishing its step
  nlohmann::json pre_batch_loader_state_;
  bool in_fit_ = false;  // checkpoints taken now resume at the next epoch

  Stage stage_ = Stage::None;
  int64_t epoch_ = 0;
  int64_t global_step_ = 0;
  int64_t batch_idx_ = 0;
  int64_t resume_batch_idx_ = 0;  // where a mid-epoch checkpoint stopped
  std::string restored_from_;     // see restored_checkpoint()
  int64_t batches_done_ = 0;      // training batches of this epoch completed (incl. the hooks')
  bool is_last_batch_ = false;
  bool should_stop_ = false;
  std::string stop_reason_, fit_stop_reason_;
  int64_t accumulate_ = 1;
  int64_t num_train_batches_ = 0;
  int64_t num_val_batches_ = 0;
  int64_t num_test_batches_ = 0;
  int64_t num_predict_batches_ = 0;
  int64_t accumulated_ = 0;         // batches backpropagated since the last optimizer step
  int64_t steps_before_batch_ = 0;  // global_step_ when the current training batch started
  int64_t last_logged_step_ = -1;
  nlohmann::json pending_loader_state_;
  std::chrono::steady_clock::time_point fit_start_;
  bool configured_ = false;
};

}  // namespace ath::train
