// LearningRateFinder and BatchSizeFinder: their searches leave no trace on the real run (module,
// optimizer, RNG and data order restored bitwise), and their results follow Lightning's rules.
#include <athanor/train/callbacks/batch_size_finder.h>
#include <athanor/train/callbacks/lambda_callback.h>
#include <athanor/train/callbacks/learning_rate_finder.h>
#include <gtest/gtest.h>

#include "train/callback_test_helpers.h"

namespace ath::train {
namespace {

using testing::bitwise_equal;
using testing::clone_state;
using testing::quiet_options;
using testing::RecordingLogger;
using testing::regression_source;
using testing::Regressor;

// Captures the module state and the RNG position at on_fit_start (placed before and after a
// tuning callback, it sees what the tuner changed).
struct FitStartProbe {
  StateDict state;
  uint64_t rng_offset = 0;
  double lr = 0;
  std::shared_ptr<LambdaCallback> callback(const std::string& name) {
    return std::make_shared<LambdaCallback>(LambdaHooks{.on_fit_start =
                                                            [this](Trainer& t, TrainingModule& m) {
                                                              state = clone_state(m);
                                                              rng_offset =
                                                                  default_generator().offset();
                                                              lr = t.optimizer()->lr(0);
                                                            }},
                                            name);
  }
};

TEST(LearningRateFinderTest, SuggestionInRangeAndStateRestored) {
  manual_seed(7);
  Regressor m(0.05, /*dropout=*/true);  // dropout: the search consumes RNG
  auto finder = std::make_shared<LearningRateFinder>(
      LearningRateFinderOptions{.min_lr = 1e-5, .max_lr = 1.0, .num_training_steps = 60});
  auto logger = std::make_shared<RecordingLogger>();
  FitStartProbe before, after;
  TrainerOptions o = quiet_options();
  o.max_epochs = 1;
  o.loggers = {logger};
  o.callbacks = {before.callback("before"), finder, after.callback("after")};
  Trainer t(o);
  t.fit(m, regression_source(10, /*shuffle=*/true));

  auto s = finder->suggestion();
  ASSERT_TRUE(s.has_value());
  EXPECT_GE(*s, 1e-5);
  EXPECT_LE(*s, 1.0);
  EXPECT_EQ(finder->optimal_lr(), s);
  EXPECT_EQ(after.lr, *s);
  EXPECT_TRUE(bitwise_equal(before.state, after.state));
  EXPECT_EQ(before.rng_offset, after.rng_offset);

  const auto& r = finder->results();
  ASSERT_EQ(r.lrs.size(), r.losses.size());
  ASSERT_GE(r.lrs.size(), 12u);
  EXPECT_EQ(r.lrs.front(), 1e-5);
  for (std::size_t i = 1; i < r.lrs.size(); ++i) {
    EXPECT_DOUBLE_EQ(r.lrs[i], 1e-5 * std::pow(1e5, static_cast<double>(i) / 60));
  }
  const std::string svg = finder->plot_svg();
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("<polyline"), std::string::npos);
  EXPECT_NE(svg.find("suggested lr"), std::string::npos);
  EXPECT_EQ(logger->texts.at("lr_finder_svg"), svg);
}

TEST(LearningRateFinderTest, FitWithFinderEqualsFitWithTheSuggestedLr) {
  auto fit = [](double lr, std::shared_ptr<LearningRateFinder> finder) {
    manual_seed(7);
    Regressor m(lr, /*dropout=*/true);
    TrainerOptions o = quiet_options();
    o.max_epochs = 2;  // no o.seed: the RNG position after init must survive the search
    if (finder) o.callbacks = {finder};
    Trainer t(o);
    t.fit(m, regression_source(6, /*shuffle=*/true));
    return clone_state(m);
  };
  auto finder = std::make_shared<LearningRateFinder>(
      LearningRateFinderOptions{.min_lr = 1e-4, .max_lr = 0.5, .num_training_steps = 40});
  StateDict with_finder = fit(0.05, finder);
  ASSERT_TRUE(finder->optimal_lr().has_value());
  StateDict direct = fit(*finder->optimal_lr(), nullptr);
  EXPECT_TRUE(bitwise_equal(with_finder, direct));
}

TEST(LearningRateFinderTest, LinearModeEarlyStopAndTooFewPoints) {
  Regressor m;
  auto lin = std::make_shared<LearningRateFinder>(LearningRateFinderOptions{
      .min_lr = 0.01, .max_lr = 0.11, .num_training_steps = 10, .mode = "linear"});
  TrainerOptions o = quiet_options();
  o.max_epochs = 1;
  o.callbacks = {lin};
  Trainer t(o);
  t.fit(m, regression_source(3));  // the search runs over several epochs of the source
  ASSERT_EQ(lin->results().lrs.size(), 10u);
  for (int i = 0; i < 10; ++i) EXPECT_NEAR(lin->results().lrs[i], 0.01 + 0.01 * i, 1e-15);
  EXPECT_FALSE(lin->suggestion().has_value());  // 10 points, 10 + 1 skipped
  EXPECT_FALSE(lin->optimal_lr().has_value());
  EXPECT_EQ(t.optimizer()->lr(0), 0.05);  // no suggestion: the lr stays the module's own

  // An absurd max_lr diverges and stops the search early.
  Regressor m2;
  auto wild = std::make_shared<LearningRateFinder>(
      LearningRateFinderOptions{.min_lr = 1e-3, .max_lr = 1e4, .num_training_steps = 100});
  o.callbacks = {wild};
  Trainer t2(o);
  t2.fit(m2, regression_source(5));
  EXPECT_TRUE(wild->stopped_early());
  EXPECT_LT(wild->results().lrs.size(), 100u);
}

TEST(LearningRateFinderTest, GradientMatchesTorchOnANonUniformGrid) {
  // y = x^2: the second-order formula is exact inside; the ends are one-sided differences.
  std::vector<double> x = {0.0, 0.5, 2.0, 3.0}, y;
  for (double v : x) y.push_back(v * v);
  auto g = detail::gradient(y, x);
  EXPECT_DOUBLE_EQ(g[0], 0.5);
  EXPECT_DOUBLE_EQ(g[1], 1.0);
  EXPECT_DOUBLE_EQ(g[2], 4.0);
  EXPECT_DOUBLE_EQ(g[3], 5.0);
}

TEST(LearningRateFinderTest, BadOptions) {
  EXPECT_THROW(LearningRateFinder({.min_lr = 1.0, .max_lr = 0.1}), ValueError);
  EXPECT_THROW(LearningRateFinder({.min_lr = 0.0}), ValueError);
  EXPECT_THROW(LearningRateFinder({.num_training_steps = 0}), ValueError);
  EXPECT_THROW(LearningRateFinder({.mode = "cosine"}), ValueError);
  EXPECT_THROW(LearningRateFinder({.early_stop_threshold = -1.0}), ValueError);
}

// ---- BatchSizeFinder -------------------------------------------------------------------------

constexpr int64_t kFeatures = 512;

// n samples of kFeatures features, made batch by batch so only the current batch is alive (its
// memory grows with the batch size); next() throws above `fail_above`, like an allocation
// failure.
class LazySource : public data::BatchSource {
 public:
  LazySource(int64_t n, int64_t bs, int64_t fail_above) : n_(n), bs_(bs), fail_above_(fail_above) {}
  int64_t num_batches() const override { return (n_ + bs_ - 1) / bs_; }
  void start_epoch(int64_t) override { next_ = 0; }
  std::optional<data::Batch> next() override {
    if (next_ >= num_batches()) return std::nullopt;
    ATH_CHECK(bs_ <= fail_above_, ValueError, "out of memory (batch size {})", bs_);
    const int64_t b = std::min(bs_, n_ - next_ * bs_);
    Generator g(static_cast<uint64_t>(1000 + next_++));
    Tensor x = randn({b, kFeatures}, {.generator = &g});
    return data::Batch(data::TensorList{x, sum(x, {1}, true)}, b);
  }
  nlohmann::json state_dict() const override { return {{"next", next_}}; }
  void load_state_dict(const nlohmann::json& s) override { next_ = s.at("next").get<int64_t>(); }

 private:
  int64_t n_, bs_, fail_above_, next_ = 0;
};

class WideRegressor : public Regressor {
 public:
  WideRegressor() { register_module("wide", wide); }
  Tensor forward(const Tensor& x) override { return wide(x); }
  OptimizerConfig configure_optimizers() override {
    return {std::make_shared<optim::SGD>(wide.parameters(), optim::SGDOptions{.lr = 1e-3})};
  }
  nn::Linear wide{nn::LinearOptions{.in = kFeatures, .out = 1}};
};

std::shared_ptr<BatchSizeFinder> make_finder(int64_t n, int64_t fail_above,
                                             BatchSizeFinderOptions options) {
  return std::make_shared<BatchSizeFinder>(
      [=](int64_t bs) { return std::make_shared<LazySource>(n, bs, fail_above); }, options);
}

int64_t run_finder(const std::shared_ptr<BatchSizeFinder>& finder, int64_t n,
                   int64_t* batches = nullptr) {
  WideRegressor m;
  TrainerOptions o = quiet_options();
  o.max_epochs = 1;
  o.limit_train_batches = int64_t{2};  // the search is under test, not the run
  o.callbacks = {finder};
  Trainer t(o);
  t.fit(m, std::make_shared<LazySource>(n, 2, 1 << 30));
  if (batches != nullptr) *batches = t.train_source()->num_batches();
  return finder->optimal_batch_size().value_or(-1);
}

TEST(BatchSizeFinderTest, MemoryCapDecides) {
  // Without a cap the sizes double until one batch holds all 1000 samples.
  auto free_run = make_finder(1000, 1 << 30, {.max_trials = 20});
  int64_t batches = 0;
  EXPECT_EQ(run_finder(free_run, 1000, &batches), 1000);
  EXPECT_EQ(batches, 1);
  const auto& trials = free_run->trials();
  ASSERT_EQ(trials.size(), 10u);  // 2, 4, ..., 1024
  const auto peak_of = [&](int64_t bs) {
    for (const auto& t : trials) {
      if (t.batch_size == bs) return t.peak_bytes;
    }
    return int64_t{-1};
  };
  ASSERT_LT(peak_of(64), peak_of(128));
  // A cap between the peaks of 64 and 128 makes 64 the answer.
  const double cap_mb = static_cast<double>(peak_of(64) + peak_of(128)) / 2.0 / (1024.0 * 1024.0);
  auto capped = make_finder(1000, 1 << 30, {.max_memory_mb = cap_mb});
  EXPECT_EQ(run_finder(capped, 1000, &batches), 64);
  EXPECT_EQ(batches, 16);  // the real run uses the source built for 64
  EXPECT_FALSE(capped->trials().back().ok);
  EXPECT_EQ(capped->trials().back().batch_size, 128);
}

TEST(BatchSizeFinderTest, FromMemoryPlanPredictsTheLargestSizeUnderTheCap) {
  // The peaks the trial search measures at 64 and 128, and a cap halfway between them.
  auto free_run = make_finder(1000, 1 << 30, {.max_trials = 20});
  run_finder(free_run, 1000);
  int64_t peak64 = -1, peak128 = -1;
  for (const auto& t : free_run->trials()) {
    if (t.batch_size == 64) peak64 = t.peak_bytes;
    if (t.batch_size == 128) peak128 = t.peak_bytes;
  }
  ASSERT_LT(peak64, peak128);
  const double cap = static_cast<double>(peak64 + peak128) / 2.0;
  auto planned =
      make_finder(1000, 1 << 30, {.max_memory_mb = cap / 1048576.0, .from_memory_plan = true});
  const int64_t size = run_finder(planned, 1000);
  // Between the two (power mode's answer is 64), from two traced steps at 2 and 4 and a few
  // trials at most, the last one under the cap.
  EXPECT_GT(size, 64);
  EXPECT_LT(size, 128);
  const auto& trials = planned->trials();
  ASSERT_GE(trials.size(), 3u);
  EXPECT_LE(trials.size(), 5u);
  EXPECT_TRUE(trials[0].traced && trials[1].traced);
  EXPECT_EQ(trials[0].batch_size, 2);
  EXPECT_EQ(trials[1].batch_size, 4);
  EXPECT_LT(trials[0].planned_bytes, trials[1].planned_bytes);
  const auto& last = trials.back();
  EXPECT_FALSE(last.traced);
  EXPECT_TRUE(last.ok);
  EXPECT_EQ(last.batch_size, size);
  EXPECT_LE(static_cast<double>(last.peak_bytes), cap);
  // The prediction for the size it chose is within 25% of the peak measured there: the plan
  // counts exact bytes of one step, the allocator rounds blocks up (by up to 12.5%) and the
  // trial loop makes the next batch while the last one is still alive (here 16% in all).
  EXPECT_NEAR(static_cast<double>(last.planned_bytes), static_cast<double>(last.peak_bytes),
              0.25 * static_cast<double>(last.peak_bytes));
  EXPECT_THROW(BatchSizeFinder([](int64_t) { return nullptr; }, {.from_memory_plan = true}),
               ValueError);
}

TEST(BatchSizeFinderTest, FailingTrialsPowerAndBinsearch) {
  EXPECT_EQ(run_finder(make_finder(1000, 12, {}), 1000), 8);
  auto bin = make_finder(1000, 12, {.mode = "binsearch"});
  EXPECT_EQ(run_finder(bin, 1000), 12);
  std::vector<int64_t> tried;
  for (const auto& t : bin->trials()) tried.push_back(t.batch_size);
  EXPECT_EQ(tried, (std::vector<int64_t>{2, 4, 8, 16, 12, 14, 13}));
  // init_val too large: halves until something works.
  EXPECT_EQ(run_finder(make_finder(1000, 5, {.init_val = 32}), 1000), 4);
}

TEST(BatchSizeFinderTest, RestoresTheRunAndReportsTotalFailure) {
  FitStartProbe before, after;
  WideRegressor m;
  TrainerOptions o = quiet_options();
  o.max_epochs = 1;
  o.callbacks = {before.callback("b"), make_finder(64, 1 << 30, {}), after.callback("a")};
  Trainer t(o);
  t.fit(m, std::make_shared<LazySource>(64, 2, 1 << 30));
  EXPECT_TRUE(bitwise_equal(before.state, after.state));
  EXPECT_EQ(before.rng_offset, after.rng_offset);

  WideRegressor m2;
  o.callbacks = {make_finder(64, 0, {})};
  Trainer t2(o);
  try {
    t2.fit(m2, std::make_shared<LazySource>(64, 2, 1 << 30));
    FAIL() << "expected a failure";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("no batch size worked"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("out of memory"), std::string::npos) << e.what();
  }
  EXPECT_THROW(BatchSizeFinder(nullptr), ValueError);
  EXPECT_THROW(make_finder(1, 1, {.mode = "linear"}), ValueError);
  EXPECT_THROW(make_finder(1, 1, {.init_val = 0}), ValueError);
}

}  // namespace
}  // namespace ath::train
