// Callback: Lightning's Callback — code that watches or steers training from outside the
// module. Every hook gets the Trainer and the module; callbacks run before the module's own hook
// of the same name, in the order given to the Trainer. State returned by state_dict() is saved
// in checkpoints under state_key() and handed back to load_state_dict() on resume.
//
//   #include "athanor/train/trainer.h"
//   struct PrintEpochs : ath::train::Callback {
//     std::string state_key() const override { return "PrintEpochs"; }
//     void on_train_epoch_end(train::Trainer& t, train::TrainingModule&) override {
//       fmt::print("epoch {} done, val_loss {}\n", t.current_epoch(),
//                  t.callback_metrics().at("val_loss"));
//     }
//   };
//   train::TrainerOptions opts;
//   opts.callbacks.push_back(std::make_shared<PrintEpochs>());
#pragma once

#include <cstdint>
#include <exception>
#include <nlohmann/json.hpp>
#include <string>

#include "athanor/data/batch.h"
#include "athanor/optim/optimizer.h"
#include "athanor/tensor/tensor.h"
#include "athanor/train/step_hook_probe.h"

namespace ath::train {

class Trainer;
class TrainingModule;
using Checkpoint = nlohmann::json;

class Callback {
 public:
  virtual ~Callback() = default;

  // Key of this callback's state in checkpoints; must be unique among a Trainer's callbacks.
  virtual std::string state_key() const = 0;
  virtual nlohmann::json state_dict() const { return nlohmann::json::object(); }
  virtual void load_state_dict(const nlohmann::json& /*state*/) {}
  // Monitoring callbacks (ModelCheckpoint, EarlyStopping) run their on_train_epoch_end after
  // the module's, so they see what it logged; the others run before it.
  virtual bool is_monitoring() const { return false; }
  // The callback_metrics key this callback reads, if any ("" for none).
  virtual std::string monitor() const { return {}; }

  using T = Trainer;
  using M = TrainingModule;
  using B = data::Batch;
  virtual void setup(T&, M&, const std::string& /*stage*/) {}
  virtual void teardown(T&, M&, const std::string& /*stage*/) {}
  virtual void on_fit_start(T&, M&) {}
  virtual void on_fit_end(T&, M&) {}
  virtual void on_sanity_check_start(T&, M&) {}
  virtual void on_sanity_check_end(T&, M&) {}
  virtual void on_train_start(T&, M&) {}
  virtual void on_train_end(T&, M&) {}
  virtual void on_train_epoch_start(T&, M&) {}
  virtual void on_train_epoch_end(T&, M&) {}
  virtual void on_train_batch_start(T&, M&, const B&, int64_t /*batch_idx*/) {}
  virtual void on_train_batch_end(T&, M&, const Tensor& /*loss*/, const B&, int64_t) {}
  // The hooks inside the training step: their defaults count themselves (step_hook_probe.h),
  // so a compiled step knows when one is overridden.
  virtual void on_before_backward(T&, M&, const Tensor& /*loss*/) {
    ++detail::t_default_step_hooks;
  }
  virtual void on_after_backward(T&, M&) { ++detail::t_default_step_hooks; }
  virtual void on_before_optimizer_step(T&, M&, optim::Optimizer&) {
    ++detail::t_default_step_hooks;
  }
  virtual void on_before_zero_grad(T&, M&, optim::Optimizer&) { ++detail::t_default_step_hooks; }
  virtual void on_validation_start(T&, M&) {}
  virtual void on_validation_end(T&, M&) {}
  virtual void on_validation_epoch_start(T&, M&) {}
  virtual void on_validation_epoch_end(T&, M&) {}
  virtual void on_validation_batch_start(T&, M&, const B&, int64_t) {}
  virtual void on_validation_batch_end(T&, M&, const B&, int64_t) {}
  virtual void on_test_start(T&, M&) {}
  virtual void on_test_end(T&, M&) {}
  virtual void on_test_epoch_start(T&, M&) {}
  virtual void on_test_epoch_end(T&, M&) {}
  virtual void on_test_batch_start(T&, M&, const B&, int64_t) {}
  virtual void on_test_batch_end(T&, M&, const B&, int64_t) {}
  virtual void on_predict_start(T&, M&) {}
  virtual void on_predict_end(T&, M&) {}
  virtual void on_predict_epoch_start(T&, M&) {}
  virtual void on_predict_epoch_end(T&, M&) {}
  virtual void on_predict_batch_start(T&, M&, const B&, int64_t) {}
  virtual void on_predict_batch_end(T&, M&, const Tensor& /*outputs*/, const B&, int64_t) {}
  virtual void on_save_checkpoint(T&, M&, Checkpoint&) {}
  virtual void on_load_checkpoint(T&, M&, const Checkpoint&) {}
  // An exception escaped fit(); called before it propagates (OnExceptionCheckpoint saves here).
  virtual void on_exception(T&, M&, const std::exception&) {}
};

}  // namespace ath::train
