// Trainer loop semantics: stop conditions, batch limits, gradient accumulation, validation
// scheduling, Lightning's logging keys and weighting, schedulers, bad configuration.
#include <athanor/optim/lr_scheduler.h>
#include <athanor/train/callbacks/early_stopping.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "train/trainer_fixtures.h"

namespace ath::train {
namespace {

using testing::quiet_options;
using testing::regression_source;
using testing::Regressor;

class CountingLogger : public Logger {
 public:
  std::string name() const override { return "counting"; }
  void log_hyperparams(const nlohmann::json& h) override { hparams = h; }
  void log_metrics(const Metrics& m, int64_t step) override { calls.push_back({step, m}); }
  nlohmann::json hparams;
  std::vector<std::pair<int64_t, Metrics>> calls;
};

TEST(TrainerLoop, MaxEpochsAndGlobalStepCountOptimizerSteps) {
  Regressor m;
  TrainerOptions o = quiet_options();
  o.max_epochs = 3;
  Trainer t(o);
  t.fit(m, regression_source(5));
  EXPECT_EQ(t.global_step(), 15);
  EXPECT_EQ(t.current_epoch(), 3);
}

TEST(TrainerLoop, MaxStepsStopsMidEpoch) {
  Regressor m;
  TrainerOptions o = quiet_options();
  o.max_steps = 7;
  Trainer t(o);
  t.fit(m, regression_source(5));
  EXPECT_EQ(t.global_step(), 7);
  // Epoch 1 was cut short: it stays the current epoch, and a resume continues it (Lightning
  // counts it as run, and its resume then skips the rest of the epoch).
  EXPECT_EQ(t.current_epoch(), 1);
}

TEST(TrainerLoop, LimitTrainBatchesCountAndFraction) {
  for (BatchLimit lim : {BatchLimit(int64_t{2}), BatchLimit(0.5)}) {
    Regressor m;
    TrainerOptions o = quiet_options();
    o.max_epochs = 2;
    o.limit_train_batches = lim;
    Trainer t(o);
    auto src = regression_source(4);
    t.fit(m, src);
    EXPECT_EQ(t.global_step(), 4);
    EXPECT_EQ(src->yielded(), 4);  // never pulls a batch it will not use
  }
}

TEST(TrainerLoop, AccumulationStepsEveryKBatchesAndAtEpochEnd) {
  Regressor m;
  TrainerOptions o = quiet_options();
  o.max_epochs = 2;
  o.accumulate_grad_batches = 2;
  Trainer t(o);
  t.fit(m, regression_source(5));
  EXPECT_EQ(t.global_step(), 6);  // per epoch: after batches 2, 4 and the leftover 5th
}

TEST(TrainerLoop, AccumulationEqualsOneBigBatchWithPlainSgd) {
  // Mean loss over 2 half-batches / 2, accumulated, = mean loss over the full batch, so one
  // accumulated step matches one step on the concatenated batch.
  class Plain : public Regressor {
   public:
    OptimizerConfig configure_optimizers() override {
      return {std::make_shared<optim::SGD>(parameters(), optim::SGDOptions{.lr = 0.1})};
    }
  };
  auto halves = testing::regression_batches(2, 8, 3);
  Tensor x = cat({halves[0][0], halves[1][0]}, 0), y = cat({halves[0][1], halves[1][1]}, 0);
  std::vector<data::Batch> whole{data::Batch(data::TensorList{x, y}, 16)};
  Plain a, b;
  b.load_state_dict(a.state_dict());
  TrainerOptions o = quiet_options();
  o.max_epochs = 1;
  o.accumulate_grad_batches = 2;
  Trainer(o).fit(a, std::make_shared<testing::VectorSource>(halves));
  o.accumulate_grad_batches = 1;
  Trainer(o).fit(b, std::make_shared<testing::VectorSource>(whole));
  EXPECT_LT(testing::max_abs_diff(a.fc.weight, b.fc.weight), 1e-6);
}

TEST(TrainerLoop, LoggingKeysFollowLightning) {
  class M : public Regressor {
   public:
    Tensor training_step(const data::Batch& b, int64_t i) override {
      Tensor loss = Regressor::training_step(b, i);
      log("both", static_cast<double>(i), {.on_step = true, .on_epoch = true});
      log("epoch_only", static_cast<double>(i), {.on_step = false, .on_epoch = true});
      return loss;
    }
  };
  M m;
  auto logger = std::make_shared<CountingLogger>();
  TrainerOptions o = quiet_options();
  o.max_epochs = 1;
  o.log_every_n_steps = 1;
  o.loggers = {logger};
  Trainer t(o);
  t.fit(m, regression_source(4), regression_source(3, false, 9));
  const Metrics& cm = t.callback_metrics();
  EXPECT_TRUE(cm.count("train_loss"));
  EXPECT_TRUE(cm.count("both_step"));
  EXPECT_TRUE(cm.count("both_epoch"));
  EXPECT_DOUBLE_EQ(cm.at("both_epoch"), 1.5);  // mean of 0..3, equal batch sizes
  EXPECT_DOUBLE_EQ(cm.at("epoch_only"), 1.5);
  EXPECT_TRUE(cm.count("val_loss"));
  EXPECT_TRUE(t.progress_bar_metrics().count("train_loss"));
  // Step logs for steps 1..4, then validation and training epoch metrics, with Lightning's step
  // numbers: the steps taken before the logging batch (0..3), and the last of them (3) for the
  // epoch-end rows.
  std::vector<int64_t> steps;
  for (const auto& call : logger->calls) steps.push_back(call.first);
  EXPECT_EQ(steps, (std::vector<int64_t>{0, 1, 2, 3, 3, 3}));
  ASSERT_GE(logger->calls.size(), 5u);
  EXPECT_TRUE(logger->calls[0].second.count("train_loss"));
  EXPECT_TRUE(logger->calls[0].second.count("both_step"));
  EXPECT_FALSE(logger->calls[0].second.count("epoch_only"));
  bool saw_epoch = false;
  for (const auto& [step, m2] : logger->calls) saw_epoch |= m2.count("both_epoch") > 0;
  EXPECT_TRUE(saw_epoch);
  EXPECT_DOUBLE_EQ(logger->hparams.at("lr").get<double>(), 0.05);
  // Outside fit the row's step is the steps taken so far, as Lightning's trainer.validate/test.
  (void)t.validate(m, regression_source(3, false, 9));
  EXPECT_EQ(logger->calls.back().first, 4);
}

TEST(TrainerLoop, EpochMeanIsWeightedByBatchSize) {
  class M : public Regressor {
   public:
    void validation_step(const data::Batch& b, int64_t i) override {
      log("v", i == 0 ? 1.0 : 4.0);  // batch sizes 8 and 2
      (void)b;
    }
  };
  auto batches = testing::regression_batches(1, 8, 4);
  auto small = testing::regression_batches(1, 2, 5);
  batches.push_back(small[0]);
  M m;
  Trainer t(quiet_options());
  auto r = t.validate(m, std::make_shared<testing::VectorSource>(batches));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_DOUBLE_EQ(r[0].at("v"), (1.0 * 8 + 4.0 * 2) / 10.0);
}

TEST(TrainerLoop, ValCheckIntervalRunsValidationMidEpoch) {
  class M : public Regressor {
   public:
    void on_validation_start() override { ++runs; }
    int runs = 0;
  };
  M m;
  TrainerOptions o = quiet_options();
  o.max_epochs = 1;
  o.num_sanity_val_steps = 0;
  o.val_check_interval = 0.25;
  Trainer t(o);
  t.fit(m, regression_source(8), regression_source(2, false, 3));
  EXPECT_EQ(m.runs, 4);  // after batches 2, 4, 6 and at the epoch end
}

TEST(TrainerLoop, CheckValEveryNEpochs) {
  class M : public Regressor {
   public:
    void on_validation_start() override { ++runs; }
    int runs = 0;
  };
  M m;
  TrainerOptions o = quiet_options();
  o.max_epochs = 4;
  o.check_val_every_n_epoch = 2;
  Trainer t(o);
  t.fit(m, regression_source(2), regression_source(2, false, 3));
  EXPECT_EQ(m.runs, 1 + 2);  // sanity check + epochs 2 and 4
}

TEST(TrainerLoop, StepSchedulerStepsPerOptimizerStep) {
  class M : public Regressor {
   public:
    OptimizerConfig configure_optimizers() override {
      auto opt = std::make_shared<optim::SGD>(parameters(), optim::SGDOptions{.lr = 1.0});
      auto s =
          std::make_shared<optim::StepLR>(*opt, optim::StepLROptions{.step_size = 1, .gamma = 0.5});
      return {opt, LRSchedulerConfig(s, {.interval = SchedulerInterval::Step})};
    }
  };
  M m;
  TrainerOptions o = quiet_options();
  o.max_epochs = 1;
  Trainer t(o);
  t.fit(m, regression_source(3));
  EXPECT_DOUBLE_EQ(t.optimizer()->lr(0), 0.125);
}

TEST(TrainerLoop, EpochSchedulerAndPlateauMonitor) {
  class M : public Regressor {
   public:
    OptimizerConfig configure_optimizers() override {
      auto opt = std::make_shared<optim::SGD>(parameters(), optim::SGDOptions{.lr = 0.01});
      auto s = std::make_shared<optim::ReduceLROnPlateau>(*opt);
      return {opt, LRSchedulerConfig(s, {.monitor = "missing_metric"})};
    }
  };
  M m;
  TrainerOptions o = quiet_options();
  o.max_epochs = 1;
  Trainer t(o);
  try {
    t.fit(m, regression_source(2), regression_source(1));
    FAIL() << "expected a KeyError";
  } catch (const KeyError& e) {
    EXPECT_NE(std::string(e.what()).find("missing_metric"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("val_loss"), std::string::npos) << e.what();
  }
}

TEST(TrainerLoop, BadOptionsAreValueErrors) {
  auto bad = [](auto mutate) {
    TrainerOptions o;
    mutate(o);
    EXPECT_THROW(Trainer{o}, ValueError);
  };
  bad([](TrainerOptions& o) { o.accumulate_grad_batches = 0; });
  bad([](TrainerOptions& o) { o.limit_train_batches = 1.5; });
  bad([](TrainerOptions& o) { o.gradient_clip_algorithm = "l2"; });
  bad([](TrainerOptions& o) { o.val_check_interval = 0.0; });
  bad([](TrainerOptions& o) { o.max_steps = -2; });
  bad([](TrainerOptions& o) { o.callbacks = {nullptr}; });
}

TEST(TrainerLoop, DetectAnomalyStopsOnNanLossNamingBatch) {
  class M : public Regressor {
   public:
    Tensor training_step(const data::Batch& b, int64_t i) override {
      Tensor loss = Regressor::training_step(b, i);
      return i == 2 ? loss * std::numeric_limits<double>::quiet_NaN() : loss;
    }
  };
  M m;
  TrainerOptions o = quiet_options();
  o.detect_anomaly = true;
  o.max_epochs = 1;
  Trainer t(o);
  try {
    t.fit(m, regression_source(4));
    FAIL() << "expected an AutogradError";
  } catch (const AutogradError& e) {
    EXPECT_NE(std::string(e.what()).find("batch 2"), std::string::npos) << e.what();
  }
  EXPECT_EQ(t.global_step(), 2);
  EXPECT_EQ(t.stage(), Stage::None);  // torn down; the trainer can run again
}

TEST(TrainerLoop, FastDevRunRunsOneBatchAndNoSideEffects) {
  Regressor m;
  TrainerOptions o;
  o.fast_dev_run = 1;
  o.default_root_dir = "/nonexistent/should/not/be/created";
  Trainer t(o);
  t.fit(m, regression_source(5), regression_source(5));
  EXPECT_EQ(t.global_step(), 1);
  EXPECT_FALSE(std::filesystem::exists(o.default_root_dir));
}

TEST(TrainerLoop, OverfitBatchesReplaysTheSameBatches) {
  class M : public Regressor {
   public:
    Tensor training_step(const data::Batch& b, int64_t i) override {
      seen.push_back(b[0].sum().item<double>());
      return Regressor::training_step(b, i);
    }
    std::vector<double> seen;
  };
  M m;
  TrainerOptions o = quiet_options();
  o.max_epochs = 2;
  o.overfit_batches = int64_t{2};
  Trainer t(o);
  t.fit(m, regression_source(6, /*shuffle=*/true), regression_source(2));
  ASSERT_EQ(m.seen.size(), 4u);
  EXPECT_EQ(m.seen[0], m.seen[2]);
  EXPECT_EQ(m.seen[1], m.seen[3]);
}

// A backward() inside training_step under automatic optimization: the error says the Trainer
// runs backward, not autograd's "pass retain_graph=true".
TEST(TrainerLoop, BackwardInsideTrainingStepSaysTheTrainerRunsIt) {
  struct M : testing::Regressor {
    Tensor training_step(const data::Batch& batch, int64_t) override {
      Tensor loss = mse_loss(forward(batch[0]), batch[1]);
      loss.backward();
      return loss;
    }
  } m;
  TrainerOptions o = testing::quiet_options();
  o.max_epochs = 1;
  try {
    Trainer(o).fit(m, testing::regression_source(2));
    FAIL() << "the second backward should fail";
  } catch (const AutogradError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("Trainer: the loss training_step returned was already backpropagated", 0),
              0u)
        << msg;
    EXPECT_NE(msg.find("manual_backward"), std::string::npos) << msg;
  }
}

// test() and validate() print Lightning's results box (its plain-text layout, 120 columns when
// the terminal's width is unknown).
TEST(TrainerLoop, TestAndValidatePrintLightningsResultsBox) {
  ::setenv("COLUMNS", "120", 1);
  testing::Regressor m;
  TrainerOptions o = testing::quiet_options();
  o.enable_progress_bar = true;
  Trainer t(o);
  ::testing::internal::CaptureStdout();
  const std::vector<Metrics> r = t.test(m, testing::regression_source(2));
  const std::string out = ::testing::internal::GetCapturedStdout();
  ::unsetenv("COLUMNS");
  std::string bar;
  for (int i = 0; i < 120; ++i) bar += "─";
  const std::string value = fmt::format("{}", r.at(0).at("test_loss"));
  const std::string box = bar + "\n       Test metric             DataLoader 0\n" + bar + "\n" +
                          "        test_loss        " + std::string((25 - value.size()) / 2, ' ') +
                          value + "\n" + bar + "\n";
  EXPECT_NE(out.find(box), std::string::npos) << out;
}

// Every fit says why it ended (Lightning: "`Trainer.fit` stopped: `max_epochs=2` reached.").
TEST(TrainerLoop, FitSaysWhyItStopped) {
  auto reason = [](auto&& configure) {
    testing::Regressor m;
    TrainerOptions o = testing::quiet_options();
    configure(o);
    Trainer t(o);
    t.fit(m, testing::regression_source(3), testing::regression_source(1, false, 7));
    return t.fit_stop_reason();
  };
  EXPECT_EQ(reason([](TrainerOptions& o) { o.max_epochs = 2; }), "`max_epochs=2` reached.");
  EXPECT_EQ(reason([](TrainerOptions& o) { o.max_steps = 4; }), "`max_steps=4` reached.");
  const std::string early = reason([](TrainerOptions& o) {
    o.max_epochs = 20;
    o.callbacks = {std::make_shared<EarlyStopping>(
        EarlyStoppingOptions{.monitor = "val_loss", .min_delta = 1e9, .patience = 1})};
  });
  EXPECT_EQ(early.rfind("EarlyStopping: Monitored metric val_loss did not improve", 0), 0u)
      << early;
}

TEST(TrainerLoop, ManualOptimization) {
  class M : public Regressor {
   public:
    M() { set_automatic_optimization(false); }
    Tensor training_step(const data::Batch& b, int64_t) override {
      optim::Optimizer& opt = optimizer();
      opt.zero_grad();
      Tensor loss = mse_loss(forward(b[0]), b[1]);
      manual_backward(loss);
      opt.step();
      ++steps;
      return loss;
    }
    int steps = 0;
  };
  M m;
  Tensor before = m.fc.weight.clone();
  TrainerOptions o = quiet_options();
  o.max_epochs = 1;
  Trainer t(o);
  t.fit(m, regression_source(3));
  EXPECT_EQ(m.steps, 3);
  EXPECT_EQ(t.global_step(), 3);
  EXPECT_GT(testing::max_abs_diff(before, m.fc.weight), 0);
}

TEST(TrainerLoop, TestAndPredict) {
  Regressor m;
  Trainer t(quiet_options());
  auto r = t.test(m, regression_source(3));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_TRUE(r[0].count("test_loss"));
  auto preds = t.predict(m, regression_source(3));
  ASSERT_EQ(preds.size(), 3u);
  EXPECT_EQ(preds[0].shape(), (Shape{8, 1}));
}

// A callback that asks to stop after every batch: min_epochs / min_steps hold training back.
struct StopAlways : Callback {
  std::string state_key() const override { return "StopAlways"; }
  void on_train_batch_end(T& t, M&, const Tensor&, const B&, int64_t) override { t.request_stop(); }
};

TEST(TrainerLoop, StopRequestsWaitForMinStepsAndMinEpochs) {
  Regressor m;
  TrainerOptions o = quiet_options();
  o.max_epochs = 50;
  o.min_steps = 5;
  o.callbacks = {std::make_shared<StopAlways>()};
  Trainer t(o);
  t.fit(m, regression_source(2));
  EXPECT_EQ(t.global_step(), 5);
  TrainerOptions o2 = quiet_options();
  o2.max_epochs = 50;
  o2.min_epochs = 3;
  o2.callbacks = {std::make_shared<StopAlways>()};
  Trainer t2(o2);
  Regressor m2;
  t2.fit(m2, regression_source(2));
  EXPECT_EQ(t2.global_step(), 5);  // epochs 1 and 2 whole, then the first batch of epoch 3
}

}  // namespace
}  // namespace ath::train
