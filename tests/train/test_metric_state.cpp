// Metric::state / load_state, what a data-parallel run sums across ranks: for every metric, the
// states of two metrics that saw one half of the data each, summed (the shorter padded with
// zeros), load into a metric that then computes exactly what one metric over all of it does.
// Bad states are refused by name.
#include <gtest/gtest.h>

#include <functional>

#include "athanor/athanor.h"
#include "athanor/train/aggregation_metrics.h"
#include "athanor/train/classification_metrics.h"
#include "athanor/train/metric_sync.h"
#include "support/expect_error.h"

namespace ath::train {
namespace {

std::vector<double> summed(std::vector<double> a, std::vector<double> b) {
  a.resize(std::max(a.size(), b.size()), 0.0);
  b.resize(a.size(), 0.0);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] += b[i];
  return a;
}

// `make` builds a fresh metric; `feed(m, half)` updates it with half 0 or 1 of the data.
template <class M>
void expect_halves_sum_to_whole(const std::function<M()>& make,
                                const std::function<void(M&, int)>& feed) {
  M whole = make(), first = make(), second = make(), merged = make();
  feed(whole, 0);
  feed(whole, 1);
  feed(first, 0);
  feed(second, 1);
  merged.load_state(summed(first.state(), second.state()));
  if constexpr (std::is_same_v<M, ConfusionMatrix>) {
    EXPECT_TRUE(equal(merged.compute(), whole.compute())) << whole.name();
  } else {
    EXPECT_DOUBLE_EQ(merged.compute(), whole.compute()) << whole.name();
  }
}

TEST(MetricState, EveryMetricsHalvesSumToTheWhole) {
  manual_seed(5);
  const Tensor scores = randn({40, 5});
  const Tensor labels = randint(0, 5, {40});
  // Class-index predictions whose halves see different numbers of classes (0..2 vs 0..4), so
  // the class-by-class states differ in length.
  const Tensor preds = cat({randint(0, 3, {20}), randint(0, 5, {20})});
  auto half = [](const Tensor& t, int h) { return t.slice(0, 20 * h, 20 * (h + 1)); };
  expect_halves_sum_to_whole<Accuracy>(
      [] { return Accuracy({.num_classes = 5, .top_k = 2}); },
      [&](Accuracy& m, int h) { m.update(half(scores, h), half(labels, h)); });
  expect_halves_sum_to_whole<Accuracy>(
      [] { return Accuracy(); },
      [&](Accuracy& m, int h) { m.update(half(preds, h), half(labels, h)); });
  expect_halves_sum_to_whole<F1Score>(
      [] { return F1Score({.num_classes = 5}); },
      [&](F1Score& m, int h) { m.update(half(scores, h), half(labels, h)); });
  expect_halves_sum_to_whole<Precision>(
      [] { return Precision({.num_classes = 5, .average = Average::kMicro}); },
      [&](Precision& m, int h) { m.update(half(preds, h), half(labels, h)); });
  expect_halves_sum_to_whole<ConfusionMatrix>(
      [] { return ConfusionMatrix({.num_classes = 5, .normalize = Normalize::kTrue}); },
      [&](ConfusionMatrix& m, int h) { m.update(half(scores, h), half(labels, h)); });
  const Tensor values = arange(0, 40).to(kFloat64) * 0.25;
  expect_halves_sum_to_whole<MeanMetric>([] { return MeanMetric(); },
                                         [&](MeanMetric& m, int h) { m.update(half(values, h)); });
  expect_halves_sum_to_whole<SumMetric>([] { return SumMetric(); },
                                        [&](SumMetric& m, int h) { m.update(half(values, h)); });
  expect_halves_sum_to_whole<MeanSquaredError>(
      [] { return MeanSquaredError(); },
      [&](MeanSquaredError& m, int h) { m.update(half(values, h), half(values, h) * 0.5); });
}

TEST(MetricState, OneRankThatSawNothingChangesNothing) {
  SumMetric seen, empty;
  seen.update(3.0);
  empty.load_state(summed(empty.state(), SumMetric().state()));
  EXPECT_TRUE(std::isnan(empty.compute()));  // no rank saw a value: still NaN
  seen.load_state(summed(seen.state(), SumMetric().state()));
  EXPECT_EQ(seen.compute(), 3.0);
}

TEST(MetricState, BadStatesAreRefusedByName) {
  Accuracy acc({.num_classes = 3});
  testing::expect_error_naming(
      [&] {
        acc.load_state(std::vector<double>{1, 2, 3});
      },
      "Accuracy: load_state: expected 2 + 3 x classes numbers");
  testing::expect_error_naming([&] { acc.load_state(std::vector<double>(2 + 3 * 4, 0.0)); },
                               "Accuracy: load_state: the state has 4 classes, the metric 3");
  testing::expect_error_naming(
      [&] {
        acc.load_state(std::vector<double>{1.5, 0});
      },
      "Accuracy: load_state: 1.5 is not a count");
  F1Score f1({.num_classes = 2});
  testing::expect_error_naming(
      [&] {
        f1.load_state(std::vector<double>{-1, 0});
      },
      "F1Score: load_state: -1 is not a count");
  ConfusionMatrix cm({.num_classes = 2});
  testing::expect_error_naming(
      [&] {
        cm.load_state(std::vector<double>{1, 2});
      },
      "ConfusionMatrix: load_state: expected 4 numbers (2 x 2), got 2");
  MeanMetric mean;
  testing::expect_error_naming([&] { mean.load_state(std::vector<double>{1}); },
                               "MeanMetric: load_state: expected 2 numbers, got 1");
}

TEST(MetricState, OneProcessSyncsToItself) {
  SingleDeviceStrategy one;
  Accuracy acc({.num_classes = 3});
  acc.update(from_vector<int64_t>({0, 1, 2, 2}), from_vector<int64_t>({0, 1, 1, 2}));
  const std::vector<double> before = acc.state();
  EXPECT_EQ(compute_synced(acc, one), 0.75);
  sync_state(acc, one);
  EXPECT_EQ(acc.state(), before);
}

}  // namespace
}  // namespace ath::train
