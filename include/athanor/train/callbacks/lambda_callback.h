// LambdaCallback: Lightning's LambdaCallback — a callback built from functions, for one-off
// hooks that do not deserve a class. Each member that is set is called from the hook of the same
// name; unset ones do nothing.
//
//   #include "athanor/train/trainer.h"
//   auto print = std::make_shared<train::LambdaCallback>(train::LambdaHooks{
//       .on_train_epoch_end = [](train::Trainer& t, train::TrainingModule&) {
//         fmt::print("epoch {} done\n", t.current_epoch());
//       }});
//
// Its state key is "LambdaCallback" (or "LambdaCallback[name]" with a name): give each of several
// LambdaCallbacks on one Trainer its own name, since the Trainer refuses duplicate state keys.
#pragma once

#include <functional>
#include <string>

#include "athanor/train/callback.h"

namespace ath::train {

struct LambdaHooks {
  using T = Trainer;
  using M = TrainingModule;
  using B = data::Batch;
  using Hook = std::function<void(T&, M&)>;
  using StageHook = std::function<void(T&, M&, const std::string&)>;
  using BatchHook = std::function<void(T&, M&, const B&, int64_t)>;

  StageHook setup;
  StageHook teardown;
  Hook on_fit_start;
  Hook on_fit_end;
  Hook on_sanity_check_start;
  Hook on_sanity_check_end;
  Hook on_train_start;
  Hook on_train_end;
  Hook on_train_epoch_start;
  Hook on_train_epoch_end;
  BatchHook on_train_batch_start;
  std::function<void(T&, M&, const Tensor&, const B&, int64_t)> on_train_batch_end;
  std::function<void(T&, M&, const Tensor&)> on_before_backward;
  Hook on_after_backward;
  std::function<void(T&, M&, optim::Optimizer&)> on_before_optimizer_step;
  std::function<void(T&, M&, optim::Optimizer&)> on_before_zero_grad;
  Hook on_validation_start;
  Hook on_validation_end;
  Hook on_validation_epoch_start;
  Hook on_validation_epoch_end;
  BatchHook on_validation_batch_start;
  BatchHook on_validation_batch_end;
  Hook on_test_start;
  Hook on_test_end;
  Hook on_test_epoch_start;
  Hook on_test_epoch_end;
  BatchHook on_test_batch_start;
  BatchHook on_test_batch_end;
  Hook on_predict_start;
  Hook on_predict_end;
  Hook on_predict_epoch_start;
  Hook on_predict_epoch_end;
  BatchHook on_predict_batch_start;
  std::function<void(T&, M&, const Tensor&, const B&, int64_t)> on_predict_batch_end;
  std::function<void(T&, M&, Checkpoint&)> on_save_checkpoint;
  std::function<void(T&, M&, const Checkpoint&)> on_load_checkpoint;
  std::function<void(T&, M&, const std::exception&)> on_exception;
};

class LambdaCallback : public Callback {
 public:
  explicit LambdaCallback(LambdaHooks hooks, std::string name = {})
      : hooks_(std::move(hooks)), name_(std::move(name)) {}

  std::string state_key() const override {
    return name_.empty() ? "LambdaCallback" : "LambdaCallback[" + name_ + "]";
  }
  const LambdaHooks& hooks() const { return hooks_; }

  void setup(T& t, M& m, const std::string& s) override { call(hooks_.setup, t, m, s); }
  void teardown(T& t, M& m, const std::string& s) override { call(hooks_.teardown, t, m, s); }
  void on_fit_start(T& t, M& m) override { call(hooks_.on_fit_start, t, m); }
  void on_fit_end(T& t, M& m) override { call(hooks_.on_fit_end, t, m); }
  void on_sanity_check_start(T& t, M& m) override { call(hooks_.on_sanity_check_start, t, m); }
  void on_sanity_check_end(T& t, M& m) override { call(hooks_.on_sanity_check_end, t, m); }
  void on_train_start(T& t, M& m) override { call(hooks_.on_train_start, t, m); }
  void on_train_end(T& t, M& m) override { call(hooks_.on_train_end, t, m); }
  void on_train_epoch_start(T& t, M& m) override { call(hooks_.on_train_epoch_start, t, m); }
  void on_train_epoch_end(T& t, M& m) override { call(hooks_.on_train_epoch_end, t, m); }
  void on_train_batch_start(T& t, M& m, const B& b, int64_t i) override {
    call(hooks_.on_train_batch_start, t, m, b, i);
  }
  void on_train_batch_end(T& t, M& m, const Tensor& loss, const B& b, int64_t i) override {
    call(hooks_.on_train_batch_end, t, m, loss, b, i);
  }
  void on_before_backward(T& t, M& m, const Tensor& loss) override {
    call_step_hook(hooks_.on_before_backward, t, m, loss);
  }
  void on_after_backward(T& t, M& m) override { call_step_hook(hooks_.on_after_backward, t, m); }
  void on_before_optimizer_step(T& t, M& m, optim::Optimizer& o) override {
    call_step_hook(hooks_.on_before_optimizer_step, t, m, o);
  }
  void on_before_zero_grad(T& t, M& m, optim::Optimizer& o) override {
    call_step_hook(hooks_.on_before_zero_grad, t, m, o);
  }
  void on_validation_start(T& t, M& m) override { call(hooks_.on_validation_start, t, m); }
  void on_validation_end(T& t, M& m) override { call(hooks_.on_validation_end, t, m); }
  void on_validation_epoch_start(T& t, M& m) override {
    call(hooks_.on_validation_epoch_start, t, m);
  }
  void on_validation_epoch_end(T& t, M& m) override { call(hooks_.on_validation_epoch_end, t, m); }
  void on_validation_batch_start(T& t, M& m, const B& b, int64_t i) override {
    call(hooks_.on_validation_batch_start, t, m, b, i);
  }
  void on_validation_batch_end(T& t, M& m, const B& b, int64_t i) override {
    call(hooks_.on_validation_batch_end, t, m, b, i);
  }
  void on_test_start(T& t, M& m) override { call(hooks_.on_test_start, t, m); }
  void on_test_end(T& t, M& m) override { call(hooks_.on_test_end, t, m); }
  void on_test_epoch_start(T& t, M& m) override { call(hooks_.on_test_epoch_start, t, m); }
  void on_test_epoch_end(T& t, M& m) override { call(hooks_.on_test_epoch_end, t, m); }
  void on_test_batch_start(T& t, M& m, const B& b, int64_t i) override {
    call(hooks_.on_test_batch_start, t, m, b, i);
  }
  void on_test_batch_end(T& t, M& m, const B& b, int64_t i) override {
    call(hooks_.on_test_batch_end, t, m, b, i);
  }
  void on_predict_start(T& t, M& m) override { call(hooks_.on_predict_start, t, m); }
  void on_predict_end(T& t, M& m) override { call(hooks_.on_predict_end, t, m); }
  void on_predict_epoch_start(T& t, M& m) override { call(hooks_.on_predict_epoch_start, t, m); }
  void on_predict_epoch_end(T& t, M& m) override { call(hooks_.on_predict_epoch_end, t, m); }
  void on_predict_batch_start(T& t, M& m, const B& b, int64_t i) override {
    call(hooks_.on_predict_batch_start, t, m, b, i);
  }
  void on_predict_batch_end(T& t, M& m, const Tensor& out, const B& b, int64_t i) override {
    call(hooks_.on_predict_batch_end, t, m, out, b, i);
  }
  void on_save_checkpoint(T& t, M& m, Checkpoint& c) override {
    call(hooks_.on_save_checkpoint, t, m, c);
  }
  void on_load_checkpoint(T& t, M& m, const Checkpoint& c) override {
    call(hooks_.on_load_checkpoint, t, m, c);
  }
  void on_exception(T& t, M& m, const std::exception& e) override {
    call(hooks_.on_exception, t, m, e);
  }

 private:
  template <class F, class... A>
  static void call(const F& f, A&&... args) {
    if (f) f(std::forward<A>(args)...);
  }
  // A hook inside the training step: an unset one counts as the default (step_hook_probe.h).
  template <class F, class... A>
  static void call_step_hook(const F& f, A&&... args) {
    if (!f) ++detail::t_default_step_hooks;
    call(f, std::forward<A>(args)...);
  }

  LambdaHooks hooks_;
  std::string name_;
};

}  // namespace ath::train
