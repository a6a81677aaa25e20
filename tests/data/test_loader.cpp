// DataLoader: order, shuffling, drop_last, workers, bounded prefetch, errors, exact resume.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "athanor/athanor.h"
#include "athanor/data/data.h"

namespace ath::data {
namespace {

// Sample i is the scalar tensor [i]; loads take a pseudo-random few hundred microseconds so that
// workers finish out of order. Can throw on one index.
struct Slow : Dataset<Tensor> {
  int64_t n;
  int64_t throw_at = -1;
  std::atomic<bool> std_error{false};
  mutable std::atomic<int64_t> gets{0};
  explicit Slow(int64_t n_) : n(n_) {}
  int64_t size() const override { return n; }
  std::string name() const override { return "Slow"; }
  Tensor get(int64_t i) const override {
    check_index(i, n, name());
    ++gets;
    std::this_thread::sleep_for(std::chrono::microseconds((i * 7919) % 5 * 100));
    if (i == throw_at) {
      if (std_error) throw std::runtime_error("disk on fire");
      ATH_THROW(KeyError, "sample {} is cursed", i);
    }
    return full({1}, static_cast<double>(i), kInt64);
  }
};

std::vector<int64_t> flat(BatchSource& src) {
  std::vector<int64_t> out;
  while (auto b = src.next()) {
    auto v = (*b)[0].to_vector<int64_t>();
    EXPECT_EQ(static_cast<int64_t>(v.size()), b->size());
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

class DataLoaderWorkers : public ::testing::TestWithParam<int64_t> {};

TEST_P(DataLoaderWorkers, OrderIsTheSamplersOrder) {
  auto ds = std::make_shared<Slow>(23);
  DataLoader loader(ds, {.batch_size = 4, .shuffle = true, .seed = 3, .num_workers = GetParam()});
  EXPECT_EQ(loader.num_batches(), 6);
  for (int64_t epoch : {0, 1}) {
    loader.start_epoch(epoch);
    RandomSampler s(23, 3);
    s.set_epoch(epoch);
    EXPECT_EQ(flat(loader), s.indices());
    EXPECT_FALSE(loader.next().has_value());
  }
}

TEST_P(DataLoaderWorkers, ResumeIsExactWithRandomTransforms) {
  const int64_t w = GetParam();
  Tensor images = rand({30, 2, 6, 6});
  auto base = std::make_shared<TensorDataset>(TensorList{images, arange(0, 30)});
  Compose augment({RandomCrop(5, 2), RandomHorizontalFlip(0.5), Normalize({0.5, 0.4}, {0.2, 0.3})});
  auto aug = map(base, [augment](TensorList s) {
    s[0] = augment(s[0]);
    return s;
  });
  using Opts = LoaderOptions<TensorList>;
  const Opts opts{.batch_size = 4, .shuffle = true, .seed = 11, .num_workers = w};
  auto all_batches = [&](BatchSource& src) {
    std::vector<TensorList> out;
    while (auto b = src.next()) out.push_back(b->as<TensorList>());
    return out;
  };
  DataLoader a(aug, opts);
  a.start_epoch(2);
  auto full_epoch = all_batches(a);
  ASSERT_EQ(full_epoch.size(), 8u);

  // Reference without workers: identical bits whatever the worker count.
  Opts serial = opts;
  serial.num_workers = 0;
  DataLoader ref(aug, serial);
  ref.start_epoch(2);
  auto ref_epoch = all_batches(ref);
  for (std::size_t k = 0; k < 8; ++k) {
    EXPECT_EQ(full_epoch[k][0].to_vector<float>(), ref_epoch[k][0].to_vector<float>()) << k;
  }

  DataLoader b(aug, opts);
  b.start_epoch(2);
  for (int k = 0; k < 3; ++k) ASSERT_TRUE(b.next().has_value());
  nlohmann::json state = b.state_dict();
  EXPECT_EQ(state["epoch"], 2);
  EXPECT_EQ(state["next_batch"], 3);

  DataLoader c(aug, opts);
  c.load_state_dict(state);
  EXPECT_EQ(c.state_dict()["next_batch"], 3);  // loaded, not yet started
  c.start_epoch(2);
  auto rest = all_batches(c);
  ASSERT_EQ(rest.size(), 5u);
  for (std::size_t k = 0; k < rest.size(); ++k) {
    EXPECT_EQ(rest[k][0].to_vector<float>(), full_epoch[k + 3][0].to_vector<float>()) << k;
    EXPECT_EQ(rest[k][1].to_vector<int64_t>(), full_epoch[k + 3][1].to_vector<int64_t>()) << k;
  }
  // The epoch after a resumed one starts from its beginning.
  c.start_epoch(3);
  EXPECT_EQ(all_batches(c).size(), 8u);
}

TEST_P(DataLoaderWorkers, ErrorsNameTheBatchAndKeepTheKind) {
  auto ds = std::make_shared<Slow>(20);
  ds->throw_at = 13;  // sequential, batch size 4: batch 3
  DataLoader loader(ds, {.batch_size = 4, .num_workers = GetParam()});
  loader.start_epoch(0);
  for (int k = 0; k < 3; ++k) ASSERT_TRUE(loader.next().has_value());
  try {
    loader.next();
    FAIL() << "no error";
  } catch (const KeyError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("batch 3"), std::string::npos) << msg;
    EXPECT_NE(msg.find("sample 13 is cursed"), std::string::npos) << msg;
  }
  auto after = loader.next();  // the loader goes on with the next batch
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ((*after)[0].to_vector<int64_t>(), (std::vector<int64_t>{16, 17, 18, 19}));
  ds->std_error = true;
  loader.start_epoch(1);
  for (int k = 0; k < 3; ++k) ASSERT_TRUE(loader.next().has_value());
  try {
    loader.next();
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("disk on fire"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("batch 3"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Workers, DataLoaderWorkers, ::testing::Values(0, 1, 2, 3));

TEST(DataLoader, ShuffleReseedsPerEpoch) {
  auto ds = std::make_shared<Slow>(16);
  DataLoader a(ds, {.batch_size = 16, .shuffle = true, .seed = 5});
  DataLoader b(ds, {.batch_size = 16, .shuffle = true, .seed = 5});
  a.start_epoch(0);
  auto e0 = flat(a);
  a.start_epoch(1);
  auto e1 = flat(a);
  b.start_epoch(0);
  EXPECT_NE(e0, e1);
  EXPECT_EQ(flat(b), e0);
  DataLoader seq(ds, {.batch_size = 5});
  seq.start_epoch(0);
  EXPECT_EQ(flat(seq), SequentialSampler(16).indices());
}

TEST(DataLoader, DropLastAndSizes) {
  auto ds = std::make_shared<Slow>(10);
  DataLoader keep(ds, {.batch_size = 4});
  DataLoader drop(ds, {.batch_size = 4, .drop_last = true});
  EXPECT_EQ(keep.num_batches(), 3);
  EXPECT_EQ(drop.num_batches(), 2);
  drop.start_epoch(0);
  int64_t batches = 0;
  while (auto b = drop.next()) {
    EXPECT_EQ(b->size(), 4);
    ++batches;
  }
  EXPECT_EQ(batches, 2);
  keep.start_epoch(0);
  std::vector<int64_t> sizes;
  while (auto b = keep.next()) sizes.push_back(b->size());
  EXPECT_EQ(sizes, (std::vector<int64_t>{4, 4, 2}));
  EXPECT_THROW(DataLoader(ds, {.batch_size = 0}), ValueError);
  EXPECT_THROW(DataLoader(ds, {.num_workers = -1}), ValueError);
  // num_workers: 100000 aborted the process inside a worker thread; refused up front now.
  try {
    DataLoader(ds, {.num_workers = 100000});
    ADD_FAILURE() << "num_workers=100000 accepted";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("num_workers must be in [0, 256], got 100000"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(DataLoader(ds, {.num_workers = 1, .prefetch_factor = int64_t{1} << 40}), ValueError);
  DataLoader fresh(ds);
  EXPECT_THROW(fresh.next(), ValueError);  // no start_epoch yet
}

TEST(DataLoader, PrefetchIsBounded) {
  auto ds = std::make_shared<Slow>(64);
  DataLoader loader(ds, {.batch_size = 2, .num_workers = 2, .prefetch_factor = 2});
  loader.start_epoch(0);
  for (int64_t k = 0; k < 32; ++k) {
    ASSERT_TRUE(loader.next().has_value());
    // After batch k is handed out, workers may have started batches up to k + 1 + 2 * 2.
    EXPECT_LE(ds->gets.load(), (k + 1 + 4) * 2) << k;
    if (k == 3) std::this_thread::sleep_for(std::chrono::milliseconds(30));
  }
}

TEST(DataLoader, ResumeNeverLoadsSkippedSamples) {
  auto ds = std::make_shared<Slow>(40);
  DataLoader loader(ds, {.batch_size = 4, .shuffle = true, .num_workers = 2});
  loader.load_state_dict({{"epoch", 0}, {"next_batch", 7}});
  loader.start_epoch(0);
  auto rest = flat(loader);
  EXPECT_EQ(rest.size(), 12u);
  EXPECT_EQ(ds->gets.load(), 12);
}

TEST(DataLoader, StateErrors) {
  auto ds = std::make_shared<Slow>(10);
  DataLoader loader(ds, {.batch_size = 4, .seed = 1});
  nlohmann::json s = loader.state_dict();
  EXPECT_EQ(s["epoch"], 0);
  EXPECT_EQ(s["next_batch"], 0);
  EXPECT_EQ(s["num_batches"], 3);
  EXPECT_THROW(loader.load_state_dict({{"epoch", 0}}), KeyError);
  EXPECT_THROW(loader.load_state_dict({{"epoch", 0}, {"next_batch", 4}}), ValueError);
  EXPECT_THROW(loader.load_state_dict({{"epoch", 0}, {"next_batch", 1}, {"batch_size", 8}}),
               ValueError);
  EXPECT_THROW(loader.load_state_dict({{"epoch", 0}, {"next_batch", 1}, {"seed", 2}}), ValueError);
  loader.load_state_dict({{"epoch", 0}, {"next_batch", 3}});
  loader.start_epoch(0);
  EXPECT_FALSE(loader.next().has_value());  // resumed at the end of the epoch
}

TEST(DataLoader, DestructionMidEpochDoesNotHang) {
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 3; ++i) {
    auto ds = std::make_shared<Slow>(200);
    DataLoader loader(ds, {.batch_size = 2, .num_workers = 3, .prefetch_factor = 4});
    loader.start_epoch(0);
    ASSERT_TRUE(loader.next().has_value());
    loader.start_epoch(1);  // abandons in-flight batches too
    ASSERT_TRUE(loader.next().has_value());
  }
  // A never-started loader with workers configured also destructs cleanly.
  { DataLoader idle(std::make_shared<Slow>(4), {.num_workers = 2}); }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(DataLoader, UserCollateAndSamplerOverride) {
  auto ds = std::make_shared<Slow>(12);
  auto sampler = std::make_shared<DistributedSampler>(
      12, DistributedSamplerOptions{.num_replicas = 2, .rank = 1, .shuffle = false});
  DataLoader loader(ds, {.batch_size = 3,
                         .num_workers = 2,
                         .sampler = sampler,
                         .collate = [](std::vector<Tensor>&& s) {
                           int64_t total = 0;
                           for (auto& t : s) total += t.item<int64_t>();
                           return total;
                         }});
  EXPECT_EQ(loader.num_batches(), 2);
  EXPECT_THROW(DataLoader(ds, {.shuffle = true, .sampler = sampler}), ValueError);
  loader.start_epoch(0);
  auto b0 = loader.next();
  ASSERT_TRUE(b0.has_value());
  EXPECT_EQ(b0->as<int64_t>(), 1 + 3 + 5);
  EXPECT_EQ(b0->size(), 3);
  EXPECT_EQ(loader.next()->as<int64_t>(), 7 + 9 + 11);
  EXPECT_FALSE(loader.next().has_value());
}

TEST(DataLoader, FastPathEqualsPerSamplePath) {
  Tensor x = randn({50, 3, 4});
  auto ds = std::make_shared<TensorDataset>(TensorList{x, arange(0, 50)});
  DataLoader fast(ds, {.batch_size = 8, .shuffle = true, .num_workers = 1});
  DataLoader slow(ds,
                  {.batch_size = 8, .shuffle = true, .collate = [](std::vector<TensorList>&& s) {
                     return default_collate(std::move(s));
                   }});
  fast.start_epoch(4);
  slow.start_epoch(4);
  while (auto a = fast.next()) {
    auto b = slow.next();
    ASSERT_TRUE(b.has_value());
    EXPECT_EQ((*a)[0].to_vector<float>(), (*b)[0].to_vector<float>());
    EXPECT_EQ((*a)[1].to_vector<int64_t>(), (*b)[1].to_vector<int64_t>());
  }
  EXPECT_FALSE(slow.next().has_value());
}

TEST(DataLoader, MakeLoaderGivesABatchSource) {
  auto ds = std::make_shared<TensorDataset>(TensorList{zeros({10, 2}), arange(0, 10)});
  std::shared_ptr<BatchSource> src = make_loader(ds, {.batch_size = 5, .num_workers = 1});
  EXPECT_EQ(src->num_batches(), 2);
  src->start_epoch(0);
  int64_t seen = 0;
  while (auto b = src->next()) seen += b->size();
  EXPECT_EQ(seen, 10);
}

TEST(DataLoader, SampleGeneratorIsPerSample) {
  // The generator depends on (seed, epoch, position) only.
  uint64_t a = 0, b = 0;
  {
    SampleGeneratorScope s(1, 2, 3);
    a = sample_generator().seed();
  }
  {
    SampleGeneratorScope s(1, 2, 3);
    b = sample_generator().seed();
  }
  EXPECT_EQ(a, b);
  EXPECT_NE(sample_seed(1, 2, 3), sample_seed(1, 2, 4));
  EXPECT_NE(sample_seed(1, 2, 3), sample_seed(1, 3, 3));
  EXPECT_EQ(&sample_generator(), &default_generator());
}

}  // namespace
}  // namespace ath::data
