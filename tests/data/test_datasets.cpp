// TensorDataset, Subset, random_split, ConcatDataset, map and iterable datasets.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "athanor/athanor.h"
#include "athanor/data/data.h"

namespace ath::data {
namespace {

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::shared_ptr<TensorDataset> numbered(int64_t n) {
  Tensor x = arange(0, n).to(kFloat32).unsqueeze(1).expand({n, 3}).contiguous();
  Tensor y = arange(0, n);
  return std::make_shared<TensorDataset>(TensorList{x, y});
}

TEST(DataTensorDataset, RowsAndErrors) {
  auto ds = numbered(6);
  EXPECT_EQ(ds->size(), 6);
  TensorList s = ds->get(4);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].to_vector<float>(), (std::vector<float>{4, 4, 4}));
  EXPECT_EQ(s[1].item<int64_t>(), 4);
  EXPECT_THROW(ds->get(6), IndexError);
  EXPECT_THROW(ds->get(-1), IndexError);
  std::string msg = message_of([&] { ds->get(9); });
  EXPECT_NE(msg.find("TensorDataset"), std::string::npos) << msg;
  EXPECT_NE(msg.find("9"), std::string::npos) << msg;
  msg = message_of([] { TensorDataset({zeros({3, 2}), zeros({4})}); });
  EXPECT_NE(msg.find("[3, 2]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[4]"), std::string::npos) << msg;
  EXPECT_THROW(TensorDataset({zeros({3, 2}), zeros({4})}), ShapeError);
  EXPECT_THROW(TensorDataset({zeros({})}), ShapeError);
  EXPECT_THROW(TensorDataset({}), ValueError);
}

TEST(DataTensorDataset, GetBatchMatchesStackedGets) {
  auto ds = numbered(10);
  std::vector<int64_t> idx = {7, 2, 2, 9};
  auto fast = ds->get_batch(idx);
  ASSERT_TRUE(fast.has_value());
  std::vector<TensorList> samples;
  for (int64_t i : idx) samples.push_back(ds->get(i));
  Batch slow = default_collate(std::move(samples));
  EXPECT_EQ(fast->size(), 4);
  for (std::size_t f = 0; f < 2; ++f) {
    EXPECT_EQ((*fast)[f].shape(), slow[f].shape());
    EXPECT_EQ((*fast)[f].dtype(), slow[f].dtype());
    EXPECT_EQ((*fast)[f].to_vector<double>(), slow[f].to_vector<double>());
  }
  std::vector<int64_t> bad = {1, 10};
  EXPECT_THROW(ds->get_batch(bad), IndexError);
}

TEST(DataSubset, MapsIndices) {
  auto ds = numbered(10);
  Subset<TensorList> sub(ds, {9, 0, 5});
  EXPECT_EQ(sub.size(), 3);
  EXPECT_EQ(sub.get(0)[1].item<int64_t>(), 9);
  EXPECT_EQ(sub.get(2)[1].item<int64_t>(), 5);
  EXPECT_THROW(sub.get(3), IndexError);
  std::vector<int64_t> idx = {2, 0};
  EXPECT_EQ(sub.get_batch(idx)->operator[](1).to_vector<int64_t>(), (std::vector<int64_t>{5, 9}));
  std::string msg = message_of([&] { Subset<TensorList>(ds, {3, 10}); });
  EXPECT_NE(msg.find("10"), std::string::npos) << msg;
  EXPECT_THROW(Subset<TensorList>(ds, {3, 10}), IndexError);
}

std::vector<int64_t> labels_of(const Subset<TensorList>& s) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < s.size(); ++i) out.push_back(s.get(i)[1].item<int64_t>());
  return out;
}

TEST(DataRandomSplit, DeterministicDisjointAndComplete) {
  auto ds = numbered(10);
  auto parts = random_split(ds, {0.7, 0.3}, 5);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0]->size(), 7);
  EXPECT_EQ(parts[1]->size(), 3);
  auto a = labels_of(*parts[0]), b = labels_of(*parts[1]);
  std::vector<int64_t> all = a;
  all.insert(all.end(), b.begin(), b.end());
  std::sort(all.begin(), all.end());
  std::vector<int64_t> expect(10);
  std::iota(expect.begin(), expect.end(), int64_t{0});
  EXPECT_EQ(all, expect);
  EXPECT_EQ(labels_of(*random_split(ds, {0.7, 0.3}, 5)[0]), a);  // same seed, same split
  EXPECT_NE(labels_of(*random_split(ds, {0.7, 0.3}, 6)[0]), a);
  auto counts = random_split(ds, {6, 4}, 0);
  EXPECT_EQ(counts[0]->size(), 6);
  auto thirds = random_split(ds, {0.33, 0.33, 0.34}, 0);  // floor 3, 3, 3 + remainder to the first
  EXPECT_EQ(thirds[0]->size(), 4);
  EXPECT_EQ(thirds[2]->size(), 3);
  EXPECT_THROW(random_split(ds, {6, 5}, 0), ValueError);
  EXPECT_THROW(random_split(ds, {-1, 11}, 0), ValueError);
}

TEST(DataConcat, CrossesBoundaries) {
  auto a = numbered(3), b = numbered(2);
  ConcatDataset<TensorList> c({a, b});
  EXPECT_EQ(c.size(), 5);
  std::vector<int64_t> got;
  for (int64_t i = 0; i < 5; ++i) got.push_back(c.get(i)[1].item<int64_t>());
  EXPECT_EQ(got, (std::vector<int64_t>{0, 1, 2, 0, 1}));
  std::string msg = message_of([&] { c.get(5); });
  EXPECT_NE(msg.find("ConcatDataset"), std::string::npos) << msg;
  EXPECT_THROW(c.get(5), IndexError);
}

TEST(DataMap, AppliesFunction) {
  auto ds = numbered(4);
  auto doubled = map(ds, [](TensorList s) { return s[1].item<int64_t>() * 2; });
  static_assert(std::is_same_v<decltype(doubled)::element_type::Sample, int64_t>);
  EXPECT_EQ(doubled->size(), 4);
  EXPECT_EQ(doubled->get(3), 6);
  EXPECT_THROW(doubled->get(4), IndexError);
  EXPECT_FALSE(doubled->get_batch(std::vector<int64_t>{0}).has_value());
}

struct Countdown : IterableDataset<int64_t> {
  int64_t n, i = 0, resets = 0, epoch = -1;
  explicit Countdown(int64_t n_) : n(n_) {}
  void reset(int64_t e) override {
    i = 0;
    ++resets;
    epoch = e;
  }
  std::optional<int64_t> next() override {
    if (i >= n) return std::nullopt;
    return 100 * epoch + i++;
  }
};

std::vector<std::vector<int64_t>> drain(BatchSource& src) {
  std::vector<std::vector<int64_t>> out;
  while (auto b = src.next()) out.push_back((*b)[0].to_vector<int64_t>());
  return out;
}

TEST(DataIterable, BatchesDropLastAndResume) {
  auto ds = std::make_shared<Countdown>(7);
  IterableLoader<Countdown> loader(ds, {.batch_size = 3});
  EXPECT_EQ(loader.num_batches(), -1);
  loader.start_epoch(1);
  auto all = drain(loader);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0], (std::vector<int64_t>{100, 101, 102}));
  EXPECT_EQ(all[2], (std::vector<int64_t>{106}));

  auto src = make_loader(ds, {.batch_size = 3, .drop_last = true});
  src->start_epoch(0);
  ASSERT_TRUE(src->next().has_value());
  auto state = src->state_dict();
  EXPECT_EQ(state["next_batch"], 1);
  auto fresh = std::make_shared<Countdown>(7);
  IterableLoader<Countdown> resumed(fresh, {.batch_size = 3, .drop_last = true});
  resumed.load_state_dict(state);
  resumed.start_epoch(0);
  auto rest = drain(resumed);
  ASSERT_EQ(rest.size(), 1u);  // drop_last: the short batch is dropped
  EXPECT_EQ(rest[0], (std::vector<int64_t>{3, 4, 5}));
  EXPECT_THROW(IterableLoader<Countdown>(ds, {.shuffle = true}), ValueError);
  EXPECT_THROW(IterableLoader<Countdown>(ds, {.num_workers = 2}), ValueError);
}

}  // namespace
}  // namespace ath::data
