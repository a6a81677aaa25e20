// TrainerOptions::compile: a compiled fit computes bit for bit what the eager fit computes —
// parameters, optimizer state, logged metrics — with gradient accumulation, clipping and a
// learning-rate schedule, across a checkpoint and resume; a step whose hooks after the backward
// are overridden is split there; steps that cannot be replayed (an overridden hook before the
// backward, log() of a host number) run eagerly after a diagnostic.
#include <gtest/gtest.h>

#include <filesystem>

#include "athanor/graph/compile.h"
#include "athanor/optim/lr_scheduler.h"
#include "athanor/train/callbacks/lambda_callback.h"
#include "athanor/train/callbacks/model_checkpoint.h"
#include "trainer_fixtures.h"

namespace ath::train::testing {
namespace {

// The regressor with a ReLU hidden layer (a fused backward), a StepLR schedule and a logged
// tensor besides the loss.
class Mlp : public TrainingModule {
 public:
  explicit Mlp(bool log_number = false) : TrainingModule("Mlp"), log_number_(log_number) {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
  Tensor forward(const Tensor& x) override { return fc2(relu(fc1(x))); }
  Tensor training_step(const data::Batch& batch, int64_t) override {
    Tensor out = forward(batch[0]);
    Tensor loss = mse_loss(out, batch[1]);
    log("train_loss", loss, {.prog_bar = true});
    log("out_mean", mean(out));
    if (log_number_) log("lr", optimizer().lr(0));
    return loss;
  }
  OptimizerConfig configure_optimizers() override {
    auto opt =
        std::make_shared<optim::SGD>(parameters(), optim::SGDOptions{.lr = 0.05, .momentum = 0.9});
    OptimizerConfig cfg{opt};
    cfg.lr_scheduler = LRSchedulerConfig(
        std::make_shared<optim::StepLR>(*opt, optim::StepLROptions{.step_size = 3, .gamma = 0.5}),
        {.interval = SchedulerInterval::Step});
    return cfg;
  }
  nn::Linear fc1{nn::LinearOptions{.in = 4, .out = 16}};
  nn::Linear fc2{nn::LinearOptions{.in = 16, .out = 1}};

 private:
  bool log_number_;
};

struct FitResult {
  StateDict params;
  Metrics metrics;
  std::optional<CompileStats> stats;
  int64_t global_step = 0;
};

FitResult fit(TrainerOptions o, bool log_number = false,
              std::vector<std::shared_ptr<Callback>> callbacks = {}) {
  manual_seed(11);
  Mlp m(log_number);
  o.max_epochs = o.max_epochs > 0 ? o.max_epochs : 2;
  o.callbacks = std::move(callbacks);
  Trainer t(o);
  t.fit(m, regression_source(7, /*shuffle=*/true));  // 7 batches: an odd accumulation tail
  FitResult r{m.state_dict(), t.callback_metrics(), std::nullopt, t.global_step()};
  if (t.compile_stats() != nullptr) r.stats = *t.compile_stats();
  return r;
}

TrainerOptions options(bool compile) {
  TrainerOptions o = quiet_options();
  o.compile = compile;
  return o;
}

TEST(TrainerCompile, FitIsBitIdenticalToEagerAndReplays) {
  const FitResult eager = fit(options(false));
  const FitResult compiled = fit(options(true));
  EXPECT_TRUE(bitwise_equal(eager.params, compiled.params));
  EXPECT_EQ(eager.metrics, compiled.metrics);  // train_loss and out_mean, from replays too
  EXPECT_EQ(eager.global_step, compiled.global_step);
  ASSERT_TRUE(compiled.stats.has_value());
  EXPECT_FALSE(eager.stats.has_value());
  // 14 steps: a few traces (momentum state appears at step 1), the rest replays; the StepLR
  // schedule changes the learning rate without retracing.
  EXPECT_GE(compiled.stats->replays, 10);
  EXPECT_EQ(compiled.stats->eager_calls, 0);
  EXPECT_TRUE(compiled.stats->diagnostics.empty());
}

TEST(TrainerCompile, GradientAccumulationAndClippingMatchEager) {
  TrainerOptions o = options(false);
  o.max_epochs = 4;
  o.accumulate_grad_batches = 3;
  o.gradient_clip_val = 0.05;
  const FitResult eager = fit(o);
  o.compile = true;
  const FitResult compiled = fit(o);
  EXPECT_TRUE(bitwise_equal(eager.params, compiled.params));
  EXPECT_EQ(eager.metrics, compiled.metrics);
  EXPECT_EQ(eager.global_step, compiled.global_step);  // 3 + 3 + the tail, per epoch
  // 28 batches: each of the 4 keys traces 2-3 times (state appears on the first step), then
  // replays.
  EXPECT_EQ(compiled.stats->traces + compiled.stats->replays, 28);
  EXPECT_GE(compiled.stats->replays, 18);
  // Keys: first micro-batch, middle, last-and-step, and the tail's (first and step at once).
  EXPECT_LE(compiled.stats->graphs, 4);
}

TEST(TrainerCompile, AnOverriddenHookAfterTheBackwardSplitsTheStepThere) {
  // The hooks record what they see: the gradient at every backward, the learning rate and the
  // gradient at every optimizer step.
  std::vector<float> seen;
  auto recording = [&] {
    return std::make_shared<LambdaCallback>(
        LambdaHooks{.on_after_backward =
                        [&](Trainer&, TrainingModule& m) {
                          seen.push_back(m.parameters()[0].grad().sum().item<float>());
                        },
                    .on_before_optimizer_step =
                        [&](Trainer&, TrainingModule& m, optim::Optimizer& opt) {
                          seen.push_back(static_cast<float>(opt.lr(0)));
                          seen.push_back(m.parameters()[2].grad().abs().sum().item<float>());
                        }});
  };
  TrainerOptions o = options(false);
  o.accumulate_grad_batches = 2;
  const FitResult eager = fit(o, false, {recording()});
  const std::vector<float> eager_seen = seen;
  seen.clear();
  o.compile = true;
  const FitResult compiled = fit(o, false, {recording()});
  EXPECT_EQ(seen, eager_seen);  // at every step, on the same gradients, as Lightning runs them
  EXPECT_EQ(eager_seen.size(), 14u + 2u * 8u);  // 14 backwards, 4 optimizer steps an epoch
  EXPECT_TRUE(bitwise_equal(eager.params, compiled.params));
  EXPECT_EQ(eager.metrics, compiled.metrics);
  ASSERT_EQ(compiled.stats->diagnostics.size(), 1u);
  EXPECT_NE(compiled.stats->diagnostics[0].find("split"), std::string::npos);
  EXPECT_GE(compiled.stats->replays, 6);  // forward and backward replay
}

TEST(TrainerCompile, AnOverriddenHookBeforeTheBackwardRunsEveryStepEagerly) {
  int calls = 0;
  auto counting = [&] {
    return std::make_shared<LambdaCallback>(LambdaHooks{
        .on_before_backward = [&](Trainer&, TrainingModule&, const Tensor&) { ++calls; }});
  };
  const FitResult eager = fit(options(false), false, {counting()});
  const int eager_calls = calls;
  calls = 0;
  const FitResult compiled = fit(options(true), false, {counting()});
  EXPECT_EQ(calls, eager_calls);  // at every step, as Lightning runs it
  EXPECT_EQ(eager_calls, 14);
  EXPECT_TRUE(bitwise_equal(eager.params, compiled.params));
  ASSERT_EQ(compiled.stats->diagnostics.size(), 1u);
  EXPECT_NE(compiled.stats->diagnostics[0].find("on_before_backward"), std::string::npos);
  EXPECT_EQ(compiled.stats->replays, 0);
}

TEST(TrainerCompile, LoggingAHostNumberRunsThoseStepsEagerly) {
  const FitResult eager = fit(options(false), /*log_number=*/true);
  const FitResult compiled = fit(options(true), /*log_number=*/true);
  EXPECT_TRUE(bitwise_equal(eager.params, compiled.params));
  EXPECT_EQ(eager.metrics, compiled.metrics);  // lr is logged at every step, as eagerly
  ASSERT_FALSE(compiled.stats->diagnostics.empty());
  EXPECT_NE(compiled.stats->diagnostics[0].find("log('lr') of a number"), std::string::npos);
  EXPECT_EQ(compiled.stats->replays, 0);
}

TEST(TrainerCompile, ResumingACompiledFitEqualsTheUninterruptedEagerOne) {
  const auto dir = std::filesystem::temp_directory_path() / "ath_trainer_compile_resume";
  std::filesystem::remove_all(dir);
  TrainerOptions o = options(false);
  o.max_epochs = 3;
  const FitResult uninterrupted = fit(o);

  TrainerOptions first = options(true);
  first.max_epochs = 1;
  first.enable_checkpointing = true;
  first.default_root_dir = dir.string();
  auto ckpt = std::make_shared<ModelCheckpoint>(
      ModelCheckpointOptions{.dirpath = dir.string(), .save_last = true});
  fit(first, false, {ckpt});

  manual_seed(11);
  Mlp m;
  TrainerOptions second = options(true);
  second.max_epochs = 3;
  Trainer t(second);
  t.fit(m, regression_source(7, true), nullptr, (dir / "last.ckpt").string());
  EXPECT_TRUE(bitwise_equal(uninterrupted.params, m.state_dict()));
  EXPECT_EQ(uninterrupted.global_step, t.global_step());
  ASSERT_NE(t.compile_stats(), nullptr);
  EXPECT_GT(t.compile_stats()->replays, 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ath::train::testing
