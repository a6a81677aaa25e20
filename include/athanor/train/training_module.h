// TrainingModule: Lightning's LightningModule — a Module that also says how to train itself.
// The user writes the model, the steps and the optimizer; the Trainer does the loop.
//
//   #include "athanor/models/fashion.h"
//   #include "athanor/optim/adam.h"
//   class Classifier : public ath::train::TrainingModule {
//    public:
//     Classifier() : TrainingModule("Classifier") {
//       register_module("net", net_);
//       save_hyperparameters({{"lr", 1e-3}});
//     }
//     Tensor forward(const Tensor& x) override { return (*net_)(x); }
//     Tensor training_step(const data::Batch& batch, int64_t) override {
//       Tensor loss = cross_entropy(forward(batch[0]), batch[1]);
//       log("train_loss", loss, {.prog_bar = true});
//       return loss;
//     }
//     void validation_step(const data::Batch& batch, int64_t) override {
//       log("val_loss", cross_entropy(forward(batch[0]), batch[1]));
//     }
//     train::OptimizerConfig configure_optimizers() override {
//       return {std::make_shared<optim::Adam>(parameters(), optim::AdamOptions{.lr = 1e-3})};
//     }
//    private:
//     std::shared_ptr<nn::Sequential> net_ = models::fashion_cnn();
//   };
//   Classifier model;
//   data::Batch batch(data::TensorList{randn({2, 1, 28, 28}), randint(0, 10, {2})}, /*size=*/2);
//   Tensor loss = model.training_step(batch, 0);   // what the Trainer calls for every batch
//
// Hooks are called in Lightning's order (each callback's first, then the module's); see
// docs/trainer.md for the full sequence. Manual optimization: set_automatic_optimization(false),
// then call manual_backward(loss) and manual_step() (or optimizer().step()) in training_step.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "athanor/data/batch.h"
#include "athanor/nn/module.h"
#include "athanor/train/logged_metrics.h"
#include "athanor/train/optimizer_config.h"
#include "athanor/train/step_hook_probe.h"

namespace ath::train {

class Trainer;
using Checkpoint = nlohmann::json;  // the metadata part of a checkpoint, editable by hooks

class TrainingModule : public nn::Module {
 public:
  explicit TrainingModule(std::string type_name = "TrainingModule");

  // --- what the user writes -------------------------------------------------------------
  // Returns the loss to back-propagate (automatic optimization), or an undefined Tensor to
  // skip this batch. In manual optimization the return value is only logged if defined.
  virtual Tensor training_step(const data::Batch& batch, int64_t batch_idx) = 0;
  virtual void validation_step(const data::Batch& /*batch*/, int64_t /*batch_idx*/) {}
  virtual void test_step(const data::Batch& /*batch*/, int64_t /*batch_idx*/) {}
  // Default: forward(batch[0]).
  virtual Tensor predict_step(const data::Batch& batch, int64_t batch_idx);
  virtual OptimizerConfig configure_optimizers() = 0;

  // --- logging ---------------------------------------------------------------------------
  void log(const std::string& name, double value, const LogOptions& options = {});
  // A one-element tensor; read once (no graph is kept).
  void log(const std::string& name, const Tensor& value, const LogOptions& options = {});
  void log_dict(const Metrics& values, const LogOptions& options = {});

  // --- hyperparameters (saved in checkpoints, logged to loggers) --------------------------
  void save_hyperparameters(nlohmann::json hparams);
  const nlohmann::json& hparams() const { return hparams_; }

  // --- manual optimization ---------------------------------------------------------------
  bool automatic_optimization() const { return automatic_optimization_; }
  void set_automatic_optimization(bool on) { automatic_optimization_ = on; }
  optim::Optimizer& optimizer();  // the configured optimizer (fit only)
  // Backpropagates `loss`; under a data-parallel strategy the gradients are the mean over the
  // ranks when it returns (as Lightning's manual_backward under DDP), so every manual backward
  // communicates.
  void manual_backward(const Tensor& loss);
  // Steps optimizer() through the Trainer's strategy: ZeRO's sharded step under "ddp_zero1"
  // (each rank updates the parameters it owns, then they are broadcast). optimizer().step()
  // gives the same parameters there, but every rank then keeps the whole optimizer state.
  void manual_step();
  // Gradient clipping as the Trainer does it (algorithm "norm" or "value").
  void clip_gradients(optim::Optimizer& opt, std::optional<double> clip_val,
                      const std::string& algorithm = "norm");

  // Lightning's example_input_array: when defined, the model summary shows in/out shapes.
  virtual Tensor example_input() const { return {}; }

  // The callback_metrics keys fit will see from this module, when it can say before running (the
  // built-in tasks can); empty: not known. fit() then checks every monitor (ModelCheckpoint,
  // EarlyStopping, a scheduler's) against them before the first batch, instead of failing at
  // the first epoch's end.
  virtual std::vector<std::string> known_metrics() const { return {}; }

  // The Trainer running this module (null outside fit/validate/test/predict).
  Trainer* trainer() const { return trainer_; }
  int64_t current_epoch() const;
  int64_t global_step() const;

  // --- hooks (all optional) --------------------------------------------------------------
  virtual void setup(const std::string& /*stage*/) {}
  virtual void teardown(const std::string& /*stage*/) {}
  virtual void on_fit_start() {}
  virtual void on_fit_end() {}
  virtual void on_train_start() {}
  virtual void on_train_end() {}
  virtual void on_train_epoch_start() {}
  virtual void on_train_epoch_end() {}
  virtual void on_train_batch_start(const data::Batch& /*batch*/, int64_t /*batch_idx*/) {}
  virtual void on_train_batch_end(const Tensor& /*loss*/, const data::Batch& /*batch*/,
                                  int64_t /*batch_idx*/) {}
  // The hooks inside the training step; their defaults count themselves (step_hook_probe.h).
  virtual void on_before_backward(const Tensor& /*loss*/) { ++detail::t_default_step_hooks; }
  virtual void on_after_backward() { ++detail::t_default_step_hooks; }
  virtual void on_before_optimizer_step(optim::Optimizer& /*opt*/) {
    ++detail::t_default_step_hooks;
  }
  virtual void on_before_zero_grad(optim::Optimizer& /*opt*/) { ++detail::t_default_step_hooks; }
  // Default: clip_gradients(opt, clip_val, algorithm) with the Trainer's settings.
  virtual void configure_gradient_clipping(optim::Optimizer& opt, std::optional<double> clip_val,
                                           const std::string& algorithm);
  virtual void on_validation_start() {}
  virtual void on_validation_end() {}
  virtual void on_validation_epoch_start() {}
  virtual void on_validation_epoch_end() {}
  virtual void on_validation_batch_start(const data::Batch& /*batch*/, int64_t /*batch_idx*/) {}
  virtual void on_validation_batch_end(const data::Batch& /*batch*/, int64_t /*batch_idx*/) {}
  virtual void on_test_start() {}
  virtual void on_test_end() {}
  virtual void on_test_epoch_start() {}
  virtual void on_test_epoch_end() {}
  virtual void on_test_batch_start(const data::Batch& /*batch*/, int64_t /*batch_idx*/) {}
  virtual void on_test_batch_end(const data::Batch& /*batch*/, int64_t /*batch_idx*/) {}
  virtual void on_predict_start() {}
  virtual void on_predict_end() {}
  virtual void on_predict_epoch_start() {}
  virtual void on_predict_epoch_end() {}
  virtual void on_predict_batch_start(const data::Batch& /*batch*/, int64_t /*batch_idx*/) {}
  virtual void on_predict_batch_end(const Tensor& /*outputs*/, const data::Batch& /*batch*/,
                                    int64_t /*batch_idx*/) {}
  // The checkpoint's JSON part, to add to (save) or read from (load) what the module needs.
  virtual void on_save_checkpoint(Checkpoint& /*checkpoint*/) {}
  virtual void on_load_checkpoint(const Checkpoint& /*checkpoint*/) {}

 private:
  friend class Trainer;
  Trainer* trainer_ = nullptr;
  nlohmann::json hparams_ = nlohmann::json::object();
  bool automatic_optimization_ = true;
};

}  // namespace ath::train
