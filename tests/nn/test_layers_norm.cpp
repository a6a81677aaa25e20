// BatchNorm1d/2d and GroupNorm: PyTorch goldens (train with running-stat updates, eval,
// momentum=None, affine=False, no running stats), state_dict names, reprs and bad options.
#include <gtest/gtest.h>

#include "athanor/athanor.h"
#include "athanor/nn/batch_norm.h"
#include "athanor/nn/group_norm.h"
#include "layers_nn_golden.h"
#include "support/module_golden.h"

namespace ath::nn {
namespace {

using testing::check_module_golden;
using testing::expect_error_naming;
using testing::layers_nn_case;

TEST(BatchNorm, StateDictMatchesPyTorchNames) {
  BatchNorm2d bn({.features = 3});
  EXPECT_EQ(bn.state_dict().keys(),
            (std::vector<std::string>{"weight", "bias", "running_mean", "running_var",
                                      "num_batches_tracked"}));
  EXPECT_EQ(bn.num_batches_tracked.dtype(), kInt64);
  EXPECT_EQ(bn.num_batches_tracked.dim(), 0);
  EXPECT_EQ(bn.running_var.to_vector<float>(), (std::vector<float>{1, 1, 1}));
  EXPECT_EQ(bn.weight.to_vector<float>(), (std::vector<float>{1, 1, 1}));
  EXPECT_EQ(bn.bias.to_vector<float>(), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(bn.parameters().size(), 2u);
  BatchNorm1d noaffine({.features = 2, .affine = false});
  EXPECT_EQ(noaffine.state_dict().keys(),
            (std::vector<std::string>{"running_mean", "running_var", "num_batches_tracked"}));
  BatchNorm1d untracked({.features = 2, .track_running_stats = false});
  EXPECT_EQ(untracked.state_dict().keys(), (std::vector<std::string>{"weight", "bias"}));
  // to(dtype) converts the floating state only: the counter stays int64.
  bn.to(kFloat64);
  EXPECT_EQ(bn.running_mean.dtype(), kFloat64);
  EXPECT_EQ(bn.num_batches_tracked.dtype(), kInt64);
}

TEST(BatchNorm, TrainUpdatesRunningStatsLikePyTorch) {
  BatchNorm2d bn({.features = 3, .momentum = 0.3});
  check_module_golden(layers_nn_case("batch_norm2d_train"), bn);  // state_after: stats, count 6
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 6);
}

TEST(BatchNorm, EvalUsesRunningStats) {
  BatchNorm2d bn({.features = 3, .eps = 1e-3});
  bn.eval();
  check_module_golden(layers_nn_case("batch_norm2d_eval"), bn);
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 2);  // unchanged
}

TEST(BatchNorm, MomentumNoneIsACumulativeAverage) {
  BatchNorm1d bn({.features = 4, .momentum = std::nullopt});
  check_module_golden(layers_nn_case("batch_norm1d_cumulative"), bn);  // factor 1 / 4
  // From fresh stats, running_mean after k batches is the plain mean of the k batch means.
  BatchNorm1d fresh({.features = 2, .momentum = std::nullopt});
  std::vector<Tensor> batches{randn({5, 2}), randn({5, 2}) + 3, randn({5, 2}) - 1};
  Tensor sum_of_means = zeros({2});
  for (const Tensor& b : batches) {
    fresh(b);
    sum_of_means = sum_of_means + b.mean({0});
  }
  testing::expect_close(fresh.running_mean, sum_of_means / 3.0, 1e-5, 1e-6, "cumulative mean");
  EXPECT_EQ(fresh.num_batches_tracked.item<int64_t>(), 3);
}

TEST(BatchNorm, AffineFalseAndUntracked) {
  BatchNorm1d noaffine({.features = 3, .affine = false});
  check_module_golden(layers_nn_case("batch_norm1d_3d_noaffine"), noaffine);
  BatchNorm2d untracked({.features = 3, .track_running_stats = false});
  check_module_golden(layers_nn_case("batch_norm2d_untracked_train"), untracked);
  // Without running stats, eval normalizes with the batch statistics too.
  BatchNorm2d untracked_eval({.features = 3, .track_running_stats = false});
  untracked_eval.eval();
  check_module_golden(layers_nn_case("batch_norm2d_untracked_eval"), untracked_eval);
}

TEST(BatchNorm, BadInputAndOptions) {
  BatchNorm2d bn2({.features = 3});
  expect_error_naming<ShapeError>([&] { bn2(zeros({2, 3, 4})); }, "BatchNorm2d");
  BatchNorm1d bn1({.features = 3});
  expect_error_naming<ShapeError>([&] { bn1(zeros({2, 3, 4, 4})); }, "BatchNorm1d");
  EXPECT_THROW(bn1(zeros({2, 4})), ShapeError);  // channel count against the buffers
  // One value per channel cannot be normalized in training; nothing is updated.
  EXPECT_THROW(bn1(ones({1, 3})), ValueError);
  EXPECT_EQ(bn1.num_batches_tracked.item<int64_t>(), 0);
  EXPECT_EQ(bn1.running_mean.to_vector<float>(), (std::vector<float>{0, 0, 0}));
  expect_error_naming<ValueError>([] { BatchNorm2d({.features = -1}); }, "BatchNorm2d");
  expect_error_naming<ValueError>([] { BatchNorm1d({.features = 2, .momentum = 1.5}); },
                                  "BatchNorm1d");
  expect_error_naming<ValueError>([] { BatchNorm1d({.features = 2, .eps = -1}); }, "BatchNorm1d");
}

TEST(BatchNorm, ResetRunningStats) {
  BatchNorm1d bn({.features = 2});
  bn(randn({4, 2}) * 3 + 2);
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 1);
  bn.reset_running_stats();
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 0);
  EXPECT_EQ(bn.running_mean.to_vector<float>(), (std::vector<float>{0, 0}));
  EXPECT_EQ(bn.running_var.to_vector<float>(), (std::vector<float>{1, 1}));
}

TEST(GroupNorm, MatchesPyTorch) {
  GroupNorm gn({.groups = 2, .channels = 6});
  check_module_golden(layers_nn_case("group_norm"), gn);
  GroupNorm plain({.groups = 3, .channels = 3, .eps = 1e-3, .affine = false});
  EXPECT_TRUE(plain.state_dict().empty());
  check_module_golden(layers_nn_case("group_norm_noaffine"), plain);
  expect_error_naming<ValueError>([] { GroupNorm({.groups = 4, .channels = 6}); }, "GroupNorm");
  expect_error_naming<ValueError>([] { GroupNorm({.groups = 0, .channels = 6}); }, "GroupNorm");
  EXPECT_THROW(gn(zeros({2, 4, 3})), ShapeError);
}

// Golden "reprs", entries 7 to 9.
TEST(Normalization, ReprsMatchPyTorch) {
  const auto& want = layers_nn_case("reprs").attrs["reprs"];
  EXPECT_EQ(BatchNorm2d({.features = 3, .momentum = 0.3}).to_string(), want[7].get<std::string>());
  EXPECT_EQ(
      BatchNorm1d(
          {.features = 4, .momentum = std::nullopt, .affine = false, .track_running_stats = false})
          .to_string(),
      want[8].get<std::string>());
  EXPECT_EQ(GroupNorm({.groups = 2, .channels = 6}).to_string(), want[9].get<std::string>());
}

}  // namespace
}  // namespace ath::nn
