// The full hook sequence of a 2-epoch fit with 2 training and 2 validation batches, compared
// with Lightning 2.x's fit loop: callbacks before the module for each hook, the sanity check
// before on_train_start, the epoch-end validation before on_train_epoch_end, monitoring
// callbacks after the module's on_train_epoch_end. zero_grad, backward and the optimizer step
// are observed through their effects on the parameter and its gradient.
#include <gtest/gtest.h>

#include "train/trainer_fixtures.h"

namespace ath::train {
namespace {

using testing::Regressor;

std::vector<std::string>* g_log = nullptr;
void rec(const std::string& s) { g_log->push_back(s); }

class RecordingModule : public Regressor {
 public:
  Tensor training_step(const data::Batch& b, int64_t i) override {
    rec("module.training_step");
    return Regressor::training_step(b, i);
  }
  void validation_step(const data::Batch& b, int64_t i) override {
    rec("module.validation_step");
    Regressor::validation_step(b, i);
  }
  void setup(const std::string& s) override { rec("module.setup:" + s); }
  void teardown(const std::string& s) override { rec("module.teardown:" + s); }
  void on_fit_start() override { rec("module.on_fit_start"); }
  void on_fit_end() override { rec("module.on_fit_end"); }
  void on_train_start() override { rec("module.on_train_start"); }
  void on_train_end() override { rec("module.on_train_end"); }
  void on_train_epoch_start() override { rec("module.on_train_epoch_start"); }
  void on_train_epoch_end() override { rec("module.on_train_epoch_end"); }
  void on_train_batch_start(const data::Batch&, int64_t) override {
    rec("module.on_train_batch_start");
  }
  void on_train_batch_end(const Tensor&, const data::Batch&, int64_t) override {
    // The optimizer stepped iff the weight changed since on_before_optimizer_step.
    if (snapshot_.defined() && testing::max_abs_diff(snapshot_, fc.weight) > 0)
      rec("optimizer.step");
    snapshot_ = Tensor();
    rec("module.on_train_batch_end");
  }
  void on_before_zero_grad(optim::Optimizer&) override { rec("module.on_before_zero_grad"); }
  void on_before_backward(const Tensor&) override {
    if (!fc.weight.grad().defined()) rec("zero_grad(set_to_none)");
    rec("module.on_before_backward");
  }
  void on_after_backward() override {
    if (fc.weight.grad().defined()) rec("backward");
    rec("module.on_after_backward");
  }
  void on_before_optimizer_step(optim::Optimizer&) override {
    rec("module.on_before_optimizer_step");
    snapshot_ = fc.weight.clone();
  }
  void configure_gradient_clipping(optim::Optimizer& o, std::optional<double> v,
                                   const std::string& a) override {
    rec("module.configure_gradient_clipping");
    Regressor::configure_gradient_clipping(o, v, a);
  }
  void on_validation_start() override { rec("module.on_validation_start"); }
  void on_validation_end() override { rec("module.on_validation_end"); }
  void on_validation_epoch_start() override { rec("module.on_validation_epoch_start"); }
  void on_validation_epoch_end() override { rec("module.on_validation_epoch_end"); }
  void on_validation_batch_start(const data::Batch&, int64_t) override {
    rec("module.on_validation_batch_start");
  }
  void on_validation_batch_end(const data::Batch&, int64_t) override {
    rec("module.on_validation_batch_end");
  }

 private:
  Tensor snapshot_;
};

class RecordingCallback : public Callback {
 public:
  RecordingCallback(std::string name, bool monitoring) : name_(std::move(name)), mon_(monitoring) {}
  std::string state_key() const override { return name_; }
  bool is_monitoring() const override { return mon_; }
  void r(const std::string& hook) { rec(name_ + "." + hook); }
  void setup(T&, M&, const std::string& s) override { r("setup:" + s); }
  void teardown(T&, M&, const std::string& s) override { r("teardown:" + s); }
  void on_fit_start(T&, M&) override { r("on_fit_start"); }
  void on_fit_end(T&, M&) override { r("on_fit_end"); }
  void on_sanity_check_start(T&, M&) override { r("on_sanity_check_start"); }
  void on_sanity_check_end(T&, M&) override { r("on_sanity_check_end"); }
  void on_train_start(T&, M&) override { r("on_train_start"); }
  void on_train_end(T&, M&) override { r("on_train_end"); }
  void on_train_epoch_start(T&, M&) override { r("on_train_epoch_start"); }
  void on_train_epoch_end(T&, M&) override { r("on_train_epoch_end"); }
  void on_train_batch_start(T&, M&, const B&, int64_t) override { r("on_train_batch_start"); }
  void on_train_batch_end(T&, M&, const Tensor&, const B&, int64_t) override {
    r("on_train_batch_end");
  }
  void on_before_backward(T&, M&, const Tensor&) override { r("on_before_backward"); }
  void on_after_backward(T&, M&) override { r("on_after_backward"); }
  void on_before_optimizer_step(T&, M&, optim::Optimizer&) override {
    r("on_before_optimizer_step");
  }
  void on_before_zero_grad(T&, M&, optim::Optimizer&) override { r("on_before_zero_grad"); }
  void on_validation_start(T&, M&) override { r("on_validation_start"); }
  void on_validation_end(T&, M&) override { r("on_validation_end"); }
  void on_validation_epoch_start(T&, M&) override { r("on_validation_epoch_start"); }
  void on_validation_epoch_end(T&, M&) override { r("on_validation_epoch_end"); }
  void on_validation_batch_start(T&, M&, const B&, int64_t) override {
    r("on_validation_batch_start");
  }
  void on_validation_batch_end(T&, M&, const B&, int64_t) override { r("on_validation_batch_end"); }

 private:
  std::string name_;
  bool mon_;
};

// Each hook as the plain callback `cb`, the monitoring callback `mon`, then the module.
void all(std::vector<std::string>& e, const std::string& hook) {
  e.push_back("cb." + hook);
  e.push_back("mon." + hook);
  e.push_back("module." + hook);
}

void validation_run(std::vector<std::string>& e) {
  all(e, "on_validation_start");
  all(e, "on_validation_epoch_start");
  for (int i = 0; i < 2; ++i) {
    all(e, "on_validation_batch_start");
    e.push_back("module.validation_step");
    all(e, "on_validation_batch_end");
  }
  all(e, "on_validation_epoch_end");
  all(e, "on_validation_end");
}

TEST(TrainerHooks, FitOrderMatchesLightning) {
  std::vector<std::string> log;
  g_log = &log;
  RecordingModule module;
  TrainerOptions o = testing::quiet_options();
  o.max_epochs = 2;
  o.callbacks = {std::make_shared<RecordingCallback>("cb", false),
                 std::make_shared<RecordingCallback>("mon", true)};
  Trainer trainer(o);
  trainer.fit(module, testing::regression_source(2), testing::regression_source(2, false, 7));
  g_log = nullptr;

  std::vector<std::string> e;
  all(e, "setup:fit");
  all(e, "on_fit_start");
  e.push_back("cb.on_sanity_check_start");
  e.push_back("mon.on_sanity_check_start");
  validation_run(e);
  e.push_back("cb.on_sanity_check_end");
  e.push_back("mon.on_sanity_check_end");
  all(e, "on_train_start");
  for (int epoch = 0; epoch < 2; ++epoch) {
    all(e, "on_train_epoch_start");
    for (int b = 0; b < 2; ++b) {
      all(e, "on_train_batch_start");
      e.push_back("module.training_step");
      all(e, "on_before_zero_grad");
      e.push_back("cb.on_before_backward");
      e.push_back("mon.on_before_backward");
      e.push_back("zero_grad(set_to_none)");
      e.push_back("module.on_before_backward");
      e.push_back("cb.on_after_backward");
      e.push_back("mon.on_after_backward");
      e.push_back("backward");
      e.push_back("module.on_after_backward");
      all(e, "on_before_optimizer_step");
      e.push_back("module.configure_gradient_clipping");
      e.push_back("cb.on_train_batch_end");
      e.push_back("mon.on_train_batch_end");
      e.push_back("optimizer.step");
      e.push_back("module.on_train_batch_end");
    }
    validation_run(e);
    e.push_back("cb.on_train_epoch_end");
    e.push_back("module.on_train_epoch_end");
    e.push_back("mon.on_train_epoch_end");
  }
  all(e, "on_train_end");
  all(e, "on_fit_end");
  all(e, "teardown:fit");

  ASSERT_EQ(log.size(), e.size());
  for (size_t i = 0; i < e.size(); ++i) EXPECT_EQ(log[i], e[i]) << "at position " << i;
}

}  // namespace
}  // namespace ath::train
