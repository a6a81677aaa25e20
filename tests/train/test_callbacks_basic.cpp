// LambdaCallback, OnExceptionCheckpoint, GradientAccumulationScheduler, Timer and
// LearningRateMonitor with Lightning's semantics.
#include <athanor/optim/lr_scheduler.h>
#include <athanor/train/callbacks/early_stopping.h>
#include <athanor/train/callbacks/gradient_accumulation_scheduler.h>
#include <athanor/train/callbacks/lambda_callback.h>
#include <athanor/train/callbacks/learning_rate_monitor.h>
#include <athanor/train/callbacks/model_checkpoint.h>
#include <athanor/train/callbacks/on_exception_checkpoint.h>
#include <athanor/train/callbacks/timer.h>
#include <athanor/train/checkpoint.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "train/callback_test_helpers.h"

namespace ath::train {
namespace {

using testing::ConfigurableRegressor;
using testing::quiet_options;
using testing::RecordingLogger;
using testing::regression_source;
using testing::Regressor;

// ---- LambdaCallback --------------------------------------------------------------------------

TEST(LambdaCallbackTest, CallsTheHooksThatAreSet) {
  std::vector<std::string> events;
  auto cb = std::make_shared<LambdaCallback>(LambdaHooks{
      .on_fit_start = [&](Trainer&, TrainingModule&) { events.push_back("fit_start"); },
      .on_fit_end = [&](Trainer&, TrainingModule&) { events.push_back("fit_end"); },
      .on_train_epoch_start =
          [&](Trainer& t, TrainingModule&) {
            events.push_back("epoch_start " + std::to_string(t.current_epoch()));
          },
      .on_train_batch_end =
          [&](Trainer&, TrainingModule&, const Tensor& loss, const data::Batch& b, int64_t i) {
            EXPECT_TRUE(loss.defined());
            EXPECT_EQ(b.size(), 8);
            events.push_back("batch " + std::to_string(i));
          },
      .on_validation_end = [&](Trainer&, TrainingModule&) { events.push_back("val_end"); },
  });
  Regressor m;
  TrainerOptions o = quiet_options();
  o.max_epochs = 2;
  o.num_sanity_val_steps = 0;
  o.callbacks = {cb};
  Trainer t(o);
  t.fit(m, regression_source(2), regression_source(1, false, 5));
  const std::vector<std::string> want = {"fit_start", "epoch_start 0", "batch 0", "batch 1",
                                         "val_end",   "epoch_start 1", "batch 0", "batch 1",
                                         "val_end",   "fit_end"};
  EXPECT_EQ(events, want);
}

// The keys of a checkpoint's "callbacks" section are Lightning's: the class name and a Python
// dict repr of the options (Callback._generate_state_key), so checkpoints read alike in both.
TEST(CallbackStateKeys, AreLightningsPythonReprKeys) {
  EXPECT_EQ(ModelCheckpoint(ModelCheckpointOptions{.monitor = "val_loss"}).state_key(),
            "ModelCheckpoint{'monitor': 'val_loss', 'mode': 'min', 'every_n_train_steps': 0, "
            "'every_n_epochs': 1, 'train_time_interval': None}");
  EXPECT_EQ(
      ModelCheckpoint(ModelCheckpointOptions{
                          .mode = "max", .every_n_epochs = 0, .train_time_interval_s = 90061.5})
          .state_key(),
      "ModelCheckpoint{'monitor': None, 'mode': 'max', 'every_n_train_steps': 0, "
      "'every_n_epochs': 0, 'train_time_interval': datetime.timedelta(days=1, "
      "seconds=3661, microseconds=500000)}");
  EXPECT_EQ(EarlyStopping(EarlyStoppingOptions{.monitor = "val_acc", .mode = "max"}).state_key(),
            "EarlyStopping{'monitor': 'val_acc', 'mode': 'max'}");
  // Python's quoting: double quotes around a text holding a single quote.
  EXPECT_EQ(EarlyStopping(EarlyStoppingOptions{.monitor = "it's"}).state_key(),
            "EarlyStopping{'monitor': \"it's\", 'mode': 'min'}");
}

TEST(LambdaCallbackTest, StateKeysAndOnException) {
  EXPECT_EQ(LambdaCallback({}).state_key(), "LambdaCallback");
  EXPECT_EQ(LambdaCallback({}, "printer").state_key(), "LambdaCallback[printer]");
  // Two unnamed ones would share a state key: the Trainer refuses them.
  Regressor m;
  TrainerOptions o = quiet_options();
  o.callbacks = {std::make_shared<LambdaCallback>(LambdaHooks{}),
                 std::make_shared<LambdaCallback>(LambdaHooks{})};
  Trainer dup(o);
  EXPECT_THROW(dup.fit(m, regression_source(2)), ValueError);

  std::string seen;
  o.max_epochs = 1;
  o.callbacks = {std::make_shared<LambdaCallback>(
      LambdaHooks{.on_train_batch_start =
                      [](Trainer&, TrainingModule&, const data::Batch&, int64_t i) {
                        if (i == 1) throw ValueError("stop here");
                      },
                  .on_exception = [&](Trainer&, TrainingModule&,
                                      const std::exception& e) { seen = e.what(); }})};
  Trainer t(o);
  EXPECT_THROW(t.fit(m, regression_source(3)), ValueError);
  EXPECT_EQ(seen, "stop here");
}

TEST(LambdaCallbackTest, PredictHooks) {
  int batches = 0, epochs = 0;
  Regressor m;
  TrainerOptions o = quiet_options();
  o.callbacks = {std::make_shared<LambdaCallback>(LambdaHooks{
      .on_predict_epoch_end = [&](Trainer&, TrainingModule&) { ++epochs; },
      .on_predict_batch_end =
          [&](Trainer&, TrainingModule&, const Tensor& out, const data::Batch&, int64_t) {
            EXPECT_EQ(out.shape(), (Shape{8, 1}));
            ++batches;
          }})};
  Trainer t(o);
  EXPECT_EQ(t.predict(m, regression_source(3)).size(), 3u);
  EXPECT_EQ(batches, 3);
  EXPECT_EQ(epochs, 1);
}

// ---- OnExceptionCheckpoint -------------------------------------------------------------------

class ThrowsAtBatch3 : public Regressor {
 public:
  Tensor training_step(const data::Batch& batch, int64_t batch_idx) override {
    if (batch_idx == 3) throw ValueError("boom at batch 3");
    return Regressor::training_step(batch, batch_idx);
  }
};

TEST(OnExceptionCheckpointTest, SavesTheStateReachedAndRethrows) {
  testing::ScratchDir dir;
  auto cb = std::make_shared<OnExceptionCheckpoint>((dir.path / "sub").string());
  EXPECT_EQ(cb->ckpt_path(), (dir.path / "sub" / "on_exception.ckpt").string());
  ThrowsAtBatch3 m;
  TrainerOptions o = quiet_options();
  o.max_epochs = 2;
  o.callbacks = {cb};
  Trainer t(o);
  try {
    t.fit(m, regression_source(6));
    FAIL() << "fit should have thrown";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(), "boom at batch 3");
  }
  ASSERT_TRUE(std::filesystem::exists(cb->ckpt_path()));
  CheckpointFile ck = load_checkpoint(cb->ckpt_path());
  EXPECT_EQ(ck.meta.at("global_step").get<int64_t>(), 3);
  EXPECT_TRUE(testing::bitwise_equal(ck.section("state_dict"), m.state_dict()));

  // The file resumes with a module that no longer fails, at the batch that failed (the
  // checkpoint holds the loader position from before that batch was pulled): all 12 steps.
  Regressor fresh;
  Trainer resume(o);
  resume.fit(fresh, regression_source(6), nullptr, cb->ckpt_path());
  EXPECT_EQ(resume.global_step(), 12);
}

TEST(OnExceptionCheckpointTest, CustomFilenameAndBadArguments) {
  EXPECT_EQ(OnExceptionCheckpoint("d", "crash").ckpt_path(),
            (std::filesystem::path("d") / "crash.ckpt").string());
  EXPECT_THROW(OnExceptionCheckpoint(""), ValueError);
  EXPECT_THROW(OnExceptionCheckpoint("d", ""), ValueError);
}

// ---- GradientAccumulationScheduler -----------------------------------------------------------

TEST(GradientAccumulationSchedulerTest, GlobalStepFollowsTheSchedule) {
  std::vector<int64_t> factors;
  auto gas =
      std::make_shared<GradientAccumulationScheduler>(std::map<int64_t, int64_t>{{0, 2}, {2, 3}});
  auto probe = std::make_shared<LambdaCallback>(LambdaHooks{
      .on_train_epoch_start =
          [&](Trainer& t, TrainingModule&) { factors.push_back(t.accumulate_grad_batches()); },
  });
  Regressor m;
  TrainerOptions o = quiet_options();
  o.max_epochs = 4;
  o.callbacks = {gas, probe};
  Trainer t(o);
  t.fit(m, regression_source(6));
  EXPECT_EQ(factors, (std::vector<int64_t>{2, 2, 3, 3}));
  EXPECT_EQ(t.global_step(), 3 + 3 + 2 + 2);
}

TEST(GradientAccumulationSchedulerTest, EpochsBeforeTheFirstKeyUseOne) {
  GradientAccumulationScheduler gas({{2, 4}, {5, 2}});
  EXPECT_EQ(gas.get_accumulate_grad_batches(0), 1);
  EXPECT_EQ(gas.get_accumulate_grad_batches(1), 1);
  EXPECT_EQ(gas.get_accumulate_grad_batches(2), 4);
  EXPECT_EQ(gas.get_accumulate_grad_batches(4), 4);
  EXPECT_EQ(gas.get_accumulate_grad_batches(100), 2);
}

TEST(GradientAccumulationSchedulerTest, BadSchedulesAndConflicts) {
  using Map = std::map<int64_t, int64_t>;
  EXPECT_THROW(GradientAccumulationScheduler(Map{}), ValueError);
  EXPECT_THROW(GradientAccumulationScheduler(Map{{-1, 2}}), ValueError);
  EXPECT_THROW(GradientAccumulationScheduler(Map{{0, 0}}), ValueError);
  Regressor m;
  TrainerOptions o = quiet_options();
  o.accumulate_grad_batches = 2;
  o.callbacks = {std::make_shared<GradientAccumulationScheduler>(Map{{0, 2}})};
  Trainer t(o);
  EXPECT_THROW(t.fit(m, regression_source(2)), ValueError);
}

// ---- Timer -----------------------------------------------------------------------------------

class SlowRegressor : public Regressor {
 public:
  Tensor training_step(const data::Batch& batch, int64_t batch_idx) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(4));
    return Regressor::training_step(batch, batch_idx);
  }
};

TEST(TimerTest, ParsesDurations) {
  EXPECT_EQ(Timer::parse_duration("01:02:03:04"), 93784.0);
  EXPECT_EQ(Timer::parse_duration("00:00:00:30"), 30.0);
  for (const char* bad : {"1:2:3", "a:b:c:d", "00:00:00:-1", "00:00:00:01:00", "", "1::2:3"}) {
    EXPECT_THROW(Timer::parse_duration(bad), ValueError) << bad;
  }
  EXPECT_EQ(Timer({.duration = "00:00:01:00"}).duration_s(), 60.0);
  EXPECT_FALSE(Timer().duration_s().has_value());
  EXPECT_THROW(Timer({.interval = "batch"}), ValueError);
  EXPECT_THROW(Timer({.duration = -1.0}), ValueError);
  EXPECT_THROW(Timer().time_elapsed("training"), ValueError);
}

TEST(TimerTest, StopsTrainingWhenTheTimeIsUp) {
  auto timer = std::make_shared<Timer>(TimerOptions{.duration = 0.03, .verbose = false});
  SlowRegressor m;
  TrainerOptions o = quiet_options();
  o.max_epochs = 1000;
  o.callbacks = {timer};
  Trainer t(o);
  t.fit(m, regression_source(5));
  EXPECT_GT(t.global_step(), 0);
  EXPECT_LT(t.global_step(), 100);  // ~8 batches of 4 ms; far from 5000
  EXPECT_GE(timer->time_elapsed("train"), 0.03);
  EXPECT_LE(*timer->time_remaining("train"), 0.0);
  ASSERT_TRUE(timer->start_time("train") && timer->end_time("train"));
  EXPECT_LE(*timer->start_time("train"), *timer->end_time("train"));
  EXPECT_FALSE(timer->start_time("test").has_value());
  EXPECT_EQ(timer->time_elapsed("test"), 0.0);
}

TEST(TimerTest, EpochIntervalFinishesTheEpoch) {
  auto timer = std::make_shared<Timer>(
      TimerOptions{.duration = 0.001, .interval = "epoch", .verbose = false});
  SlowRegressor m;
  TrainerOptions o = quiet_options();
  o.max_epochs = 10;
  o.callbacks = {timer};
  Trainer t(o);
  t.fit(m, regression_source(5));
  EXPECT_EQ(t.global_step(), 5);
  EXPECT_EQ(t.current_epoch(), 1);
}

TEST(TimerTest, ResumedStateContinuesTheBudget) {
  Timer a({.duration = 100.0, .verbose = false});
  a.load_state_dict({{"time_elapsed", {{"train", 40.0}, {"validate", 3.0}}}});
  EXPECT_EQ(a.time_elapsed("train"), 40.0);
  EXPECT_EQ(a.time_elapsed("validate"), 0.0);  // only training time carries over
  EXPECT_EQ(*a.time_remaining(), 60.0);
  EXPECT_EQ(a.state_dict()["time_elapsed"]["train"].get<double>(), 40.0);

  // A restored budget that is already spent stops at once (athanor finishes the batch in
  // flight: one step; Lightning would run none).
  auto spent = std::make_shared<Timer>(TimerOptions{.duration = 1.0, .verbose = false});
  spent->load_state_dict({{"time_elapsed", {{"train", 2.0}}}});
  Regressor m;
  TrainerOptions o = quiet_options();
  o.max_epochs = 3;
  o.callbacks = {spent};
  Trainer t(o);
  t.fit(m, regression_source(5));
  EXPECT_EQ(t.global_step(), 1);
  EXPECT_GE(spent->time_elapsed(), 2.0);
}

// ---- LearningRateMonitor ---------------------------------------------------------------------

TEST(LearningRateMonitorTest, LogsLrMomentumAndWeightDecayEveryStep) {
  auto logger = std::make_shared<RecordingLogger>();
  Regressor m;
  TrainerOptions o = quiet_options();
  o.max_epochs = 2;
  o.log_every_n_steps = 1;
  o.loggers = {logger};
  o.callbacks = {std::make_shared<LearningRateMonitor>(LearningRateMonitorOptions{
      .logging_interval = "step", .log_momentum = true, .log_weight_decay = true})};
  Trainer t(o);
  t.fit(m, regression_source(3));
  auto lr = logger->series("lr-SGD");
  ASSERT_EQ(lr.size(), 6u);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(lr[i].first, i);  // logged at the step about to be taken
    EXPECT_EQ(lr[i].second, 0.05);
  }
  EXPECT_EQ(logger->series("lr-SGD-momentum").front().second, 0.9);
  EXPECT_EQ(logger->series("lr-SGD-weight_decay").front().second, 0.0);
}

TEST(LearningRateMonitorTest, AutoFollowsTheSchedulerAndUsesItsName) {
  auto logger = std::make_shared<RecordingLogger>();
  ConfigurableRegressor m([](ConfigurableRegressor& self) {
    auto opt = std::make_shared<optim::SGD>(self.parameters(), optim::SGDOptions{.lr = 0.1});
    auto s =
        std::make_shared<optim::StepLR>(*opt, optim::StepLROptions{.step_size = 2, .gamma = 0.5});
    return OptimizerConfig{
        opt, LRSchedulerConfig(s, {.interval = SchedulerInterval::Step, .name = "my_lr"})};
  });
  TrainerOptions o = quiet_options();
  o.max_epochs = 2;
  o.log_every_n_steps = 2;
  o.loggers = {logger};
  o.callbacks = {std::make_shared<LearningRateMonitor>()};
  Trainer t(o);
  t.fit(m, regression_source(4));
  // Logged at the batch starts whose step is a logging step (steps 1, 3, 5, 7), never at epoch
  // starts (the scheduler is stepped per step).
  auto lr = logger->series("my_lr");
  ASSERT_EQ(lr.size(), 4u);
  for (std::size_t i = 0; i < lr.size(); ++i) {
    const int64_t step = lr[i].first;
    EXPECT_EQ(step, static_cast<int64_t>(2 * i + 1));
    EXPECT_DOUBLE_EQ(lr[i].second, 0.1 * std::pow(0.5, static_cast<double>(step / 2)));
  }
  EXPECT_TRUE(logger->series("lr-SGD").empty());
}

TEST(LearningRateMonitorTest, EpochIntervalAndParamGroups) {
  auto logger = std::make_shared<RecordingLogger>();
  ConfigurableRegressor m([](ConfigurableRegressor& self) {
    auto p = self.parameters();
    auto opt = std::make_shared<optim::SGD>(
        std::vector<optim::ParamGroup>{{.params = {p[0]}}, {.params = {p[1]}, .lr = 0.2}},
        optim::SGDOptions{.lr = 0.1});
    return OptimizerConfig{opt, std::nullopt};
  });
  TrainerOptions o = quiet_options();
  o.max_epochs = 3;
  o.loggers = {logger};
  o.callbacks = {std::make_shared<LearningRateMonitor>(
      LearningRateMonitorOptions{.logging_interval = "epoch"})};
  Trainer t(o);
  t.fit(m, regression_source(2));
  auto pg1 = logger->series("lr-SGD/pg1"), pg2 = logger->series("lr-SGD/pg2");
  ASSERT_EQ(pg1.size(), 3u);
  ASSERT_EQ(pg2.size(), 3u);
  EXPECT_EQ(pg1[1], (std::pair<int64_t, double>{2, 0.1}));
  EXPECT_EQ(pg2[2], (std::pair<int64_t, double>{4, 0.2}));
}

TEST(LearningRateMonitorTest, NeedsALoggerAndAValidInterval) {
  EXPECT_THROW(LearningRateMonitor({.logging_interval = "batch"}), ValueError);
  Regressor m;
  TrainerOptions o = quiet_options();
  o.callbacks = {std::make_shared<LearningRateMonitor>()};
  Trainer t(o);
  EXPECT_THROW(t.fit(m, regression_source(2)), ValueError);
}

}  // namespace
}  // namespace ath::train
