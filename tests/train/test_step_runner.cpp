// The one training step (src/train/step_runner.h) behind fit, LearningRateFinder and
// BatchSizeFinder, and its two plug points: the precision plugin sees every step of all three,
// in Lightning's order, and the strategy reduces each window's gradients and keeps files to
// global rank 0.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "athanor/train/callbacks/batch_size_finder.h"
#include "athanor/train/callbacks/learning_rate_finder.h"
#include "train/callback_test_helpers.h"

namespace ath::train {
namespace {

using testing::quiet_options;
using testing::regression_source;
using testing::Regressor;

// Backpropagates loss * 1024 and divides the gradients back before the hooks and clipping: a
// power-of-two scale, so every float32 result must match the unscaled run bit for bit.
struct RecordingLossScale : Float32Precision {
  std::string name() const override { return "32-true, loss scale 1024"; }
  Tensor forward(const std::function<Tensor()>& step) override {
    ++forwards;
    return step();
  }
  Tensor scale_loss(const Tensor& loss) override {
    events.push_back("scale_loss");
    return loss * 1024.0;
  }
  void optimizer_step(optim::Optimizer& opt, const std::function<void()>& before) override {
    events.push_back("unscale");
    NoGradGuard no_grad;
    for (std::size_t g = 0; g < opt.num_param_groups(); ++g) {
      for (const Tensor& p : opt.params(g)) {
        if (p.grad().defined()) p.grad().mul_(1.0 / 1024);
      }
    }
    before();
    opt.step();
    ++steps;
  }
  int forwards = 0, steps = 0;
  std::vector<std::string> events;
};

// Records the hooks around the step and the gradient the optimizer step will see.
struct StepProbe : Callback {
  explicit StepProbe(std::vector<std::string>* events) : events(events) {}
  std::string state_key() const override { return "StepProbe"; }
  void on_before_backward(Trainer&, TrainingModule&, const Tensor&) override {
    events->push_back("on_before_backward");
  }
  void on_before_optimizer_step(Trainer&, TrainingModule&, optim::Optimizer& opt) override {
    events->push_back("on_before_optimizer_step");
    grads.push_back(opt.params(0)[0].grad().clone());
  }
  std::vector<std::string>* events;
  std::vector<Tensor> grads;
};

TEST(StepRunner, PrecisionPluginWrapsEveryFitStepInLightningsOrder) {
  auto run = [](std::shared_ptr<RecordingLossScale> precision, std::vector<Tensor>* grads) {
    manual_seed(3);
    Regressor m(0.05);
    TrainerOptions o = quiet_options();
    o.max_epochs = 2;
    o.accumulate_grad_batches = 2;
    o.gradient_clip_val = 0.5;  // clipping must see unscaled gradients to match
    o.precision_plugin = precision;
    std::vector<std::string> events;
    auto probe = std::make_shared<StepProbe>(precision ? &precision->events : &events);
    o.callbacks = {probe};
    Trainer t(o);
    t.fit(m, regression_source(5));  // 5 batches: windows of 2, 2 and 1 each epoch
    *grads = probe->grads;
    return m.state_dict();
  };
  std::vector<Tensor> plain_grads, scaled_grads;
  StateDict plain = run(nullptr, &plain_grads);
  auto precision = std::make_shared<RecordingLossScale>();
  StateDict scaled = run(precision, &scaled_grads);

  EXPECT_TRUE(testing::bitwise_equal(plain, scaled));
  ASSERT_EQ(plain_grads.size(), 6u);  // 3 optimizer steps an epoch
  ASSERT_EQ(scaled_grads.size(), plain_grads.size());
  for (std::size_t i = 0; i < plain_grads.size(); ++i) {
    EXPECT_TRUE(equal(plain_grads[i], scaled_grads[i])) << "step " << i;
  }
  EXPECT_EQ(precision->forwards, 10);
  EXPECT_EQ(precision->steps, 6);
  // The first window: two micro-batches scaled before the backward hook, then the unscale
  // before the optimizer-step hook.
  const std::vector<std::string> first_window = {"scale_loss", "on_before_backward",
                                                 "scale_loss", "on_before_backward",
                                                 "unscale",    "on_before_optimizer_step"};
  ASSERT_GE(precision->events.size(), first_window.size());
  EXPECT_EQ(std::vector<std::string>(precision->events.begin(),
                                     precision->events.begin() + first_window.size()),
            first_window);
}

TEST(StepRunner, TheTunersStepThroughThePrecisionPlugin) {
  auto precision = std::make_shared<RecordingLossScale>();
  Regressor m(0.05);
  TrainerOptions o = quiet_options();
  o.max_epochs = 1;
  o.limit_train_batches = int64_t{3};
  o.precision_plugin = precision;
  o.callbacks = {std::make_shared<LearningRateFinder>(
      LearningRateFinderOptions{.num_training_steps = 5, .early_stop_threshold = std::nullopt})};
  Trainer t(o);
  t.fit(m, regression_source(4));
  EXPECT_EQ(precision->forwards, 5 + 3);  // the search's steps, then fit's
  EXPECT_EQ(precision->steps, 5 + 3);

  auto bs_precision = std::make_shared<RecordingLossScale>();
  Regressor m2(0.05);
  o.precision_plugin = bs_precision;
  o.limit_train_batches = int64_t{1};
  o.callbacks = {std::make_shared<BatchSizeFinder>(
      [](int64_t bs) {
        return std::make_shared<testing::VectorSource>(testing::regression_batches(2, bs));
      },
      BatchSizeFinderOptions{.max_trials = 2, .steps_per_trial = 3})};
  Trainer t2(o);
  t2.fit(m2, regression_source(2));
  EXPECT_EQ(bs_precision->forwards, 2 * 3 + 1);  // two trials of 3 steps, then fit's batch
  EXPECT_EQ(bs_precision->steps, 2 * 3 + 1);
}

// A strategy that says it is rank 1 of 2 and counts what fit asks of it.
struct SecondRankStrategy : Strategy {
  std::string name() const override { return "fake_second_rank"; }
  int64_t world_size() const override { return 2; }
  int64_t global_rank() const override { return rank; }
  void setup(TrainingModule&, optim::Optimizer&) override { ++setups; }
  void reduce_gradients(optim::Optimizer&) override { ++reductions; }
  void barrier(const std::string& name) override { barriers.push_back(name); }
  int64_t rank = 1;
  int setups = 0, reductions = 0;
  std::vector<std::string> barriers;
};

TEST(Strategy, GradientsReducedEveryWindowAndFilesWrittenOnRankZeroOnly) {
  for (int64_t rank : {0, 1}) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    testing::ScratchDir dir;
    auto strategy = std::make_shared<SecondRankStrategy>();
    strategy->rank = rank;
    Regressor m(0.05);
    TrainerOptions o;  // the defaults: progress bar, loggers, a checkpoint each epoch
    o.enable_model_summary = false;
    o.max_epochs = 2;
    o.accumulate_grad_batches = 2;
    o.default_root_dir = dir.path.string();
    o.strategy = strategy;
    Trainer t(o);
    ::testing::internal::CaptureStdout();
    t.fit(m, regression_source(4));
    const std::string out = ::testing::internal::GetCapturedStdout();

    EXPECT_EQ(t.is_global_zero(), rank == 0);
    EXPECT_EQ(strategy->setups, 1);
    EXPECT_EQ(strategy->reductions, t.global_step());
    EXPECT_EQ(t.global_step(), 4);
    EXPECT_EQ(strategy->barriers,
              std::vector<std::string>(2, "Trainer.save_checkpoint"));  // one a saved epoch
    const bool wrote_files =
        std::filesystem::exists(dir.path) && !std::filesystem::is_empty(dir.path);
    EXPECT_EQ(wrote_files, rank == 0);
    EXPECT_EQ(out.find("Epoch") != std::string::npos, rank == 0) << out;
  }
}

TEST(Strategy, DefaultsAreOneProcessAndFloat32) {
  Trainer t;
  EXPECT_EQ(t.strategy().name(), "single_device");
  EXPECT_EQ(t.strategy().world_size(), 1);
  EXPECT_TRUE(t.is_global_zero());
  EXPECT_EQ(t.precision().name(), "32-true");
  Tensor x = from_vector<float>({1, 2});
  EXPECT_TRUE(t.strategy().broadcast(x).is_same(x));
}

}  // namespace
}  // namespace ath::train
