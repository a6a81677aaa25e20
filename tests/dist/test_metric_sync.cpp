// Metrics synchronised across ranks (train/metric_sync.h): each rank updates its metric with its
// own shard of a dataset every rank can generate; compute_synced gives, on every rank, exactly
// what one metric over the whole dataset gives, keeps the local state, and works again after
// more updates. Rank r sees classes 0..r+1 only, so the class-by-class states differ in length.
#include <gtest/gtest.h>

#include "athanor/train/classification_metrics.h"
#include "athanor/train/ddp_strategy.h"
#include "athanor/train/metric_sync.h"
#include "dist_test_util.h"

namespace ath::dist::testing {
namespace {

// Shard r of round `round`: 10 + r samples with predictions and targets in 0..r+1.
std::pair<Tensor, Tensor> shard(int rank, int round) {
  manual_seed(static_cast<uint64_t>(100 * round + rank));
  const int64_t n = 10 + rank;
  return {randint(0, rank + 2, {n}), randint(0, rank + 2, {n})};
}

TEST(DistMetricSync, EveryRankComputesTheWholeDatasetsValue) {
  train::DDPStrategy strategy;
  const int world_size = world().world_size(), rank = world().rank();
  train::F1Score mine({.num_classes = world_size + 1});
  train::Accuracy mine_acc;
  train::F1Score whole({.num_classes = world_size + 1});
  train::Accuracy whole_acc;
  for (int round = 0; round < 2; ++round) {
    const auto [p, t] = shard(rank, round);
    mine.update(p, t);
    mine_acc.update(p, t);
    for (int r = 0; r < world_size; ++r) {
      const auto [pr, tr] = shard(r, round);
      whole.update(pr, tr);
      whole_acc.update(pr, tr);
    }
    const std::vector<double> local = mine.state();
    EXPECT_DOUBLE_EQ(train::compute_synced(mine, strategy), whole.compute()) << "round " << round;
    EXPECT_DOUBLE_EQ(train::compute_synced(mine_acc, strategy), whole_acc.compute());
    EXPECT_EQ(mine.state(), local);  // the local state is kept for the next round
  }
}

}  // namespace
}  // namespace ath::dist::testing
