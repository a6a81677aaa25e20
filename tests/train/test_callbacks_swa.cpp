// StochasticWeightAveraging: Lightning's timing (the average holds the weights at the start of
// epochs swa_start .. max_epochs - 1), SWALR's learning rates, update_bn's cumulative BatchNorm
// statistics, and a resume that continues the same average bitwise.
#include <athanor/nn/batch_norm.h>
#include <athanor/train/callbacks/lambda_callback.h>
#include <athanor/train/callbacks/model_checkpoint.h>
#include <athanor/train/callbacks/stochastic_weight_averaging.h>
#include <gtest/gtest.h>

#include <numbers>

#include "train/callback_test_helpers.h"

namespace ath::train {
namespace {

using testing::bitwise_equal;
using testing::clone_state;
using testing::quiet_options;
using testing::regression_source;
using testing::Regressor;

TEST(StochasticWeightAveragingTest, WeightsAreTheMeanOfTheEpochStartWeights) {
  auto swa = std::make_shared<StochasticWeightAveraging>(
      StochasticWeightAveragingOptions{.swa_lrs = {0.02},
                                       .swa_epoch_start = 0.5,
                                       .annealing_epochs = 2,
                                       .annealing_strategy = "linear"});
  std::vector<std::vector<Tensor>> snapshots;
  std::map<int64_t, double> lr_by_epoch;
  auto recorder =
      std::make_shared<LambdaCallback>(LambdaHooks{.on_train_epoch_start =
                                                       [&](Trainer& t, TrainingModule& m) {
                                                         if (t.current_epoch() < 2) return;
                                                         std::vector<Tensor> ps;
                                                         for (const Tensor& p : m.parameters())
                                                           ps.push_back(p.detach().clone());
                                                         snapshots.push_back(ps);
                                                       }},
                                       "recorder");
  auto lr_probe = std::make_shared<LambdaCallback>(
      LambdaHooks{.on_train_batch_end =
                      [&](Trainer& t, TrainingModule&, const Tensor&, const data::Batch&, int64_t) {
                        lr_by_epoch[t.current_epoch()] = t.optimizer()->lr(0);
                      }},
      "lr_probe");
  Regressor m;
  TrainerOptions o = quiet_options();
  o.max_epochs = 6;
  o.callbacks = {recorder, swa, lr_probe};
  Trainer t(o);
  t.fit(m, regression_source(4, /*shuffle=*/true));

  EXPECT_EQ(swa->swa_start(), 2);  // int(0.5 * 6) = 3, 1-based -> epoch 2
  EXPECT_EQ(swa->swa_end(), 5);
  EXPECT_EQ(swa->n_averaged(), 4);
  ASSERT_EQ(snapshots.size(), 4u);  // epochs 2, 3, 4, 5
  const std::vector<Tensor> params = m.parameters();
  for (std::size_t i = 0; i < params.size(); ++i) {
    Tensor mean = (snapshots[0][i] + snapshots[1][i] + snapshots[2][i] + snapshots[3][i]) / 4.0;
    EXPECT_LT(testing::max_abs_diff(params[i], mean), 1e-6) << i;
  }
  // SWALR, linear over 2 epochs from the lr SWA found (0.05) to 0.02.
  EXPECT_DOUBLE_EQ(lr_by_epoch[1], 0.05);
  EXPECT_DOUBLE_EQ(lr_by_epoch[2], 0.05);
  EXPECT_DOUBLE_EQ(lr_by_epoch[3], 0.5 * 0.02 + 0.5 * 0.05);
  EXPECT_DOUBLE_EQ(lr_by_epoch[4], 0.02);
  EXPECT_DOUBLE_EQ(lr_by_epoch[5], 0.02);
}

TEST(StochasticWeightAveragingTest, CosineAnnealingAndIntegerStart) {
  StochasticWeightAveraging swa(
      {.swa_lrs = {0.1}, .swa_epoch_start = int64_t{3}, .annealing_epochs = 4});
  Regressor m;
  TrainerOptions o = quiet_options();
  o.max_epochs = 4;
  o.callbacks = {std::shared_ptr<Callback>(&swa, [](Callback*) {})};
  Trainer t(o);
  t.fit(m, regression_source(2));
  EXPECT_EQ(swa.swa_start(), 2);
  const double a = (1 - std::cos(std::numbers::pi * 0.25)) / 2;
  EXPECT_DOUBLE_EQ(swa.swa_lr_at(0, 3), 0.1 * a + 0.05 * (1 - a));
  EXPECT_DOUBLE_EQ(swa.swa_lr_at(0, 2), 0.05);
  EXPECT_DOUBLE_EQ(swa.swa_lr_at(0, 9), 0.1);
}

// fc1 -> BatchNorm1d -> fc2, so the running statistics depend on the averaged fc1.
class BnRegressor : public Regressor {
 public:
  BnRegressor() {
    register_module("fc1", fc1);
    register_module("bn", bn);
    register_module("fc2", fc2);
  }
  Tensor forward(const Tensor& x) override { return fc2(bn(fc1(x))); }
  OptimizerConfig configure_optimizers() override {
    return {std::make_shared<optim::SGD>(parameters(), optim::SGDOptions{.lr = 0.02})};
  }
  nn::Linear fc1{nn::LinearOptions{.in = 4, .out = 3}};
  nn::BatchNorm1d bn{nn::BatchNormOptions{.features = 3}};
  nn::Linear fc2{nn::LinearOptions{.in = 3, .out = 1}};
};

TEST(StochasticWeightAveragingTest, BatchNormStatisticsAreRecomputedForTheAverage) {
  auto swa = std::make_shared<StochasticWeightAveraging>(
      StochasticWeightAveragingOptions{.swa_lrs = {0.01}, .swa_epoch_start = 0.5});
  BnRegressor m;
  TrainerOptions o = quiet_options();
  o.max_epochs = 4;
  o.callbacks = {swa};
  Trainer t(o);
  auto batches = testing::regression_batches(5);
  t.fit(m, std::make_shared<testing::VectorSource>(batches));

  // update_bn: the running mean is the plain average of the batch means of fc1(x) under the
  // final (averaged) weights; num_batches_tracked counts that one pass.
  NoGradGuard no_grad;
  Tensor expected_mean = zeros({3});
  for (const auto& b : batches) expected_mean = expected_mean + mean(m.fc1(b[0]), {0});
  expected_mean = expected_mean / 5.0;
  EXPECT_LT(testing::max_abs_diff(m.bn.running_mean, expected_mean), 1e-6);
  EXPECT_EQ(m.bn.num_batches_tracked.item<int64_t>(), 5);
  EXPECT_EQ(m.bn.options.momentum, 0.1);  // put back
}

StateDict swa_run(const std::filesystem::path& dir, int64_t max_epochs, const std::string& ckpt) {
  manual_seed(3);
  Regressor m;
  TrainerOptions o = quiet_options();
  o.max_epochs = max_epochs;
  o.callbacks = {std::make_shared<StochasticWeightAveraging>(StochasticWeightAveragingOptions{
                     .swa_lrs = {0.01}, .swa_epoch_start = int64_t{2}, .annealing_epochs = 3}),
                 std::make_shared<ModelCheckpoint>(ModelCheckpointOptions{
                     .dirpath = dir.string(), .save_top_k = 0, .save_last = true})};
  Trainer t(o);
  t.fit(m, regression_source(3, /*shuffle=*/true), nullptr, ckpt);
  return clone_state(m);
}

TEST(StochasticWeightAveragingTest, ResumeContinuesTheSameAverage) {
  testing::ScratchDir a, b;
  const StateDict straight = swa_run(a.path, 6, "");
  swa_run(b.path, 4, "");  // its last.ckpt: after epoch 3, average of epochs 1-3 inside
  const StateDict resumed = swa_run(b.path, 6, (b.path / "last.ckpt").string());
  EXPECT_TRUE(bitwise_equal(straight, resumed));

  // The state round-trips exactly through JSON.
  StochasticWeightAveraging s({.swa_lrs = {0.01}});
  s.load_state_dict({{"n_averaged", 2},
                     {"latest_update_epoch", 5},
                     {"initial_lrs", {0.05}},
                     {"average", nlohmann::json::array()}});
  EXPECT_EQ(s.state_dict()["n_averaged"], 2);
  EXPECT_EQ(s.state_dict()["latest_update_epoch"], 5);
}

TEST(StochasticWeightAveragingTest, BadOptions) {
  using O = StochasticWeightAveragingOptions;
  EXPECT_THROW(StochasticWeightAveraging(O{}), ValueError);
  EXPECT_THROW(StochasticWeightAveraging(O{.swa_lrs = {-1.0}}), ValueError);
  EXPECT_THROW(StochasticWeightAveraging(O{.swa_lrs = {0.1}, .swa_epoch_start = int64_t{0}}),
               ValueError);
  EXPECT_THROW(StochasticWeightAveraging(O{.swa_lrs = {0.1}, .swa_epoch_start = 1.5}), ValueError);
  EXPECT_THROW(StochasticWeightAveraging(O{.swa_lrs = {0.1}, .annealing_epochs = -1}), ValueError);
  EXPECT_THROW(StochasticWeightAveraging(O{.swa_lrs = {0.1}, .annealing_strategy = "step"}),
               ValueError);
  Regressor m;
  TrainerOptions o = quiet_options();
  o.max_epochs = 2;
  o.callbacks = {std::make_shared<StochasticWeightAveraging>(O{.swa_lrs = {0.1, 0.2, 0.3}})};
  Trainer t(o);
  EXPECT_THROW(t.fit(m, regression_source(2)), ValueError);  // 3 lrs for 1 param group
}

}  // namespace
}  // namespace ath::train
