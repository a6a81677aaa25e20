// Samplers: orders, per-epoch reshuffling, DistributedSampler's padding as torch does it.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "athanor/core/error.h"
#include "athanor/data/sampler.h"

namespace ath::data {
namespace {

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), int64_t{0});
  return v;
}

TEST(DataSampler, SequentialIsInOrder) {
  SequentialSampler s(5);
  EXPECT_EQ(s.size(), 5);
  EXPECT_EQ(s.indices(), iota(5));
  s.set_epoch(3);
  EXPECT_EQ(s.indices(), iota(5));
  EXPECT_TRUE(SequentialSampler(0).indices().empty());
}

TEST(DataSampler, RandomIsAPermutationPerEpoch) {
  RandomSampler s(100, 42);
  auto e0 = s.indices();
  auto sorted = e0;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, iota(100));
  EXPECT_NE(e0, iota(100));
  s.set_epoch(1);
  auto e1 = s.indices();
  EXPECT_NE(e0, e1);
  s.set_epoch(0);
  EXPECT_EQ(s.indices(), e0);  // depends only on (seed, epoch)
  RandomSampler other(100, 42);
  EXPECT_EQ(other.indices(), e0);
  RandomSampler seed2(100, 43);
  EXPECT_NE(seed2.indices(), e0);
  EXPECT_EQ(permutation(1, 0, 0), std::vector<int64_t>{0});
  EXPECT_THROW(RandomSampler(-1), ValueError);
}

std::vector<int64_t> ranks(int64_t n, DistributedSamplerOptions o, int64_t rank) {
  o.rank = rank;
  DistributedSampler s(n, o);
  return s.indices();
}

TEST(DataSampler, DistributedPadsLikeTorch) {
  // torch: indices [0..9] + [0, 1] (padding), rank r takes [r::3].
  DistributedSamplerOptions o{.num_replicas = 3, .shuffle = false};
  EXPECT_EQ(ranks(10, o, 0), (std::vector<int64_t>{0, 3, 6, 9}));
  EXPECT_EQ(ranks(10, o, 1), (std::vector<int64_t>{1, 4, 7, 0}));
  EXPECT_EQ(ranks(10, o, 2), (std::vector<int64_t>{2, 5, 8, 1}));
  o.drop_last = true;
  EXPECT_EQ(ranks(10, o, 0), (std::vector<int64_t>{0, 3, 6}));
  EXPECT_EQ(ranks(10, o, 2), (std::vector<int64_t>{2, 5, 8}));
  // More replicas than samples: the padding cycles ([0, 1, 0, 1, 0] as in torch).
  DistributedSamplerOptions many{.num_replicas = 5, .shuffle = false};
  EXPECT_EQ(ranks(2, many, 3), (std::vector<int64_t>{1}));
  EXPECT_EQ(ranks(2, many, 4), (std::vector<int64_t>{0}));
}

TEST(DataSampler, DistributedShuffleCoversEverySampleOnce) {
  DistributedSamplerOptions o{.num_replicas = 4, .shuffle = true, .seed = 9};
  std::multiset<int64_t> all;
  for (int64_t r = 0; r < 4; ++r) {
    auto mine = ranks(20, o, r);
    EXPECT_EQ(mine.size(), 5u);
    all.insert(mine.begin(), mine.end());
  }
  auto expect = iota(20);
  EXPECT_EQ(all, std::multiset<int64_t>(expect.begin(), expect.end()));
  o.rank = 1;
  DistributedSampler s(20, o);
  auto e0 = s.indices();
  s.set_epoch(1);
  EXPECT_NE(s.indices(), e0);
  EXPECT_THROW(DistributedSampler(10, {.num_replicas = 2, .rank = 2}), ValueError);
  EXPECT_THROW(DistributedSampler(10, {.num_replicas = 0}), ValueError);
}

}  // namespace
}  // namespace ath::data
