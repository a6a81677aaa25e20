// Stateful metrics: hand-computed values, sample-count weighting across batches, torchmetrics'
// macro-averaging rules, and bad input.
#include <gtest/gtest.h>

#include <cmath>

#include "athanor/athanor.h"
#include "athanor/train/metrics.h"

namespace ath::train {
namespace {

Tensor ints(const std::vector<int64_t>& v) { return from_vector<int64_t>(v); }
Tensor floats(const std::vector<float>& v, const Shape& s) { return from_vector<float>(v, s); }

template <class E, class F>
void expect_error(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "expected an error mentioning " << needle;
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

// targets [0,0,0,1,1,2], preds [0,1,1,1,2,2]:
//   class 0: tp 1 fp 0 fn 2;  class 1: tp 1 fp 2 fn 1;  class 2: tp 1 fp 1 fn 0.
const std::vector<int64_t> kTarget = {0, 0, 0, 1, 1, 2};
const std::vector<int64_t> kPred = {0, 1, 1, 1, 2, 2};

TEST(Metrics, AccuracyMicroAndMacro) {
  Accuracy acc;
  acc.update(ints(kPred), ints(kTarget));
  EXPECT_DOUBLE_EQ(acc.compute(), 0.5);
  EXPECT_EQ(acc.count(), 6);
  Accuracy macro({.num_classes = 4, .average = Average::kMacro});  // class 3 absent: left out
  macro.update(ints(kPred), ints(kTarget));
  EXPECT_DOUBLE_EQ(macro.compute(), (1.0 / 3 + 1.0 / 2 + 1.0) / 3);
  // A class predicted but never a target still counts (recall 0/0 -> 0), as in torchmetrics.
  Accuracy m2({.num_classes = 2, .average = Average::kMacro});
  m2.update(ints({0, 1}), ints({0, 0}));
  EXPECT_DOUBLE_EQ(m2.compute(), 0.25);
}

TEST(Metrics, AccuracyWeightsBySampleCount) {
  Accuracy acc({.num_classes = 3});
  EXPECT_TRUE(std::isnan(acc.compute()));
  EXPECT_DOUBLE_EQ(acc.forward(ints({0, 1, 2, 0}), ints({0, 1, 2, 0})), 1.0);
  EXPECT_DOUBLE_EQ(acc.forward(ints({1}), ints({0})), 0.0);
  EXPECT_DOUBLE_EQ(acc.compute(), 0.8);  // 4 of 5, not the mean of the batch values (0.5)
  acc.reset();
  EXPECT_TRUE(std::isnan(acc.compute()));
  acc.update(ints({2}), ints({2}));
  EXPECT_DOUBLE_EQ(acc.compute(), 1.0);
}

TEST(Metrics, AccuracyFromLogitsAndTopK) {
  Tensor logits = floats({0.1f, 0.5f, 0.3f, 0.2f,     // target 2: one class above -> top-2
                          0.9f, 0.05f, 0.03f, 0.02f,  // target 3: three above -> top-4 only
                          0.2f, 0.2f, 0.6f, 0.0f},    // target 1: tie with class 0 ranks below
                         {3, 4});
  Tensor target = ints({2, 3, 1});
  std::vector<double> expected = {0.0, 1.0 / 3, 2.0 / 3, 1.0};
  for (int64_t k = 1; k <= 4; ++k) {
    Accuracy acc({.num_classes = 4, .top_k = k});
    acc.update(logits, target);
    EXPECT_DOUBLE_EQ(acc.compute(), expected[k - 1]) << "top_k=" << k;
  }
  // argmax ties go to the lowest class: row [0.2, 0.2, ...] would predict 0.
  Accuracy tie;
  tie.update(floats({0.5f, 0.5f}, {1, 2}), ints({0}));
  EXPECT_DOUBLE_EQ(tie.compute(), 1.0);
  // Probabilities in float64, target int32, extra dims: preds (N, C, L), target (N, L).
  Tensor p = from_vector<double>({0.9, 0.1, 0.1, 0.9, 0.2, 0.3, 0.8, 0.7}, {2, 2, 2});
  // sample (0,0): [0.9, 0.1] -> 0; (0,1): [0.1, 0.9] -> 1; (1,0): [0.2, 0.8] -> 1;
  // (1,1): [0.3, 0.7] -> 1
  Accuracy seq;
  seq.update(p, from_vector<int32_t>({0, 1, 0, 1}, {2, 2}));
  EXPECT_DOUBLE_EQ(seq.compute(), 0.75);
}

TEST(Metrics, IgnoreIndex) {
  Accuracy acc({.num_classes = 3, .ignore_index = -100});
  acc.update(ints({0, 1, 2}), ints({0, -100, 1}));
  EXPECT_DOUBLE_EQ(acc.compute(), 0.5);
  EXPECT_EQ(acc.count(), 2);
}

TEST(Metrics, PrecisionRecallF1) {
  const double p_macro = (1.0 + 1.0 / 3 + 1.0 / 2) / 3;
  const double r_macro = (1.0 / 3 + 1.0 / 2 + 1.0) / 3;
  const double f_macro = (2.0 / 4 + 2.0 / 5 + 2.0 / 3) / 3;
  Precision p({.num_classes = 4});  // class 3 never occurs: out of the macro mean
  Recall r({.num_classes = 4});
  F1Score f({.num_classes = 4});
  p.update(ints(kPred), ints(kTarget));
  r.update(ints(kPred), ints(kTarget));
  f.update(ints(kPred), ints(kTarget));
  EXPECT_DOUBLE_EQ(p.compute(), p_macro);
  EXPECT_DOUBLE_EQ(r.compute(), r_macro);
  EXPECT_DOUBLE_EQ(f.compute(), f_macro);
  for (Average avg : {Average::kMicro}) {
    Precision pm({.num_classes = 3, .average = avg});
    Recall rm({.num_classes = 3, .average = avg});
    F1Score fm({.num_classes = 3, .average = avg});
    pm.update(ints(kPred), ints(kTarget));
    rm.update(ints(kPred), ints(kTarget));
    fm.update(ints(kPred), ints(kTarget));
    EXPECT_DOUBLE_EQ(pm.compute(), 0.5);  // micro = accuracy for single-label multiclass
    EXPECT_DOUBLE_EQ(rm.compute(), 0.5);
    EXPECT_DOUBLE_EQ(fm.compute(), 0.5);
  }
  f.reset();
  EXPECT_TRUE(std::isnan(f.compute()));
}

// F1 against a naive reference over random labels split into uneven batches.
TEST(Metrics, F1MatchesNaiveReference) {
  const int64_t c = 5, n = 97;
  std::vector<int64_t> t(n), pr(n);
  uint64_t s = 12345;
  auto next = [&] {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int64_t>((s >> 33) % 5);
  };
  for (int64_t i = 0; i < n; ++i) {
    t[i] = next() % 4;                            // class 4 never a target
    pr[i] = next() % 4 == 0 ? t[i] : next() % 4;  // nor predicted: leaves the macro mean
  }
  for (Average avg : {Average::kMacro, Average::kMicro}) {
    double ref = 0;
    int64_t stp = 0, sfp = 0, sfn = 0, present = 0;
    for (int64_t k = 0; k < c; ++k) {
      int64_t tp = 0, fp = 0, fn = 0;
      for (int64_t i = 0; i < n; ++i) {
        tp += pr[i] == k && t[i] == k;
        fp += pr[i] == k && t[i] != k;
        fn += pr[i] != k && t[i] == k;
      }
      stp += tp, sfp += fp, sfn += fn;
      if (tp + fp + fn > 0) {
        ref += 2.0 * tp / (2.0 * tp + fp + fn);
        ++present;
      }
    }
    ref = avg == Average::kMacro ? ref / present : 2.0 * stp / (2.0 * stp + sfp + sfn);
    F1Score f1({.num_classes = c, .average = avg});
    for (int64_t start = 0, len = 1; start < n; start += len, len = len * 2 + 1) {
      const int64_t m = std::min(len, n - start);
      f1.update(ints({pr.begin() + start, pr.begin() + start + m}),
                ints({t.begin() + start, t.begin() + start + m}));
    }
    EXPECT_NEAR(f1.compute(), ref, 1e-12) << (avg == Average::kMacro ? "macro" : "micro");
  }
}

TEST(Metrics, ConfusionMatrix) {
  ConfusionMatrix cm({.num_classes = 3});
  cm.update(ints(kPred), ints(kTarget));
  Tensor m = cm.compute();
  EXPECT_EQ(m.dtype(), kInt64);
  EXPECT_EQ(m.shape(), (Shape{3, 3}));
  EXPECT_EQ(m.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 0, 0, 1, 1, 0, 0, 1}));
  ConfusionMatrix norm({.num_classes = 3, .normalize = Normalize::kTrue});
  norm.update(ints(kPred), ints(kTarget));
  std::vector<double> v = norm.compute().to_vector<double>();
  std::vector<double> want = {1.0 / 3, 2.0 / 3, 0, 0, 0.5, 0.5, 0, 0, 1};
  for (int i = 0; i < 9; ++i) EXPECT_DOUBLE_EQ(v[i], want[i]);
  ConfusionMatrix all({.num_classes = 2, .normalize = Normalize::kAll});
  all.update(ints({0, 0, 1, 1}), ints({0, 1, 1, 1}));
  EXPECT_EQ(all.compute().to_vector<double>(), (std::vector<double>{0.25, 0, 0.25, 0.5}));
  cm.reset();
  EXPECT_EQ(cm.compute().to_vector<int64_t>(), std::vector<int64_t>(9, 0));
}

TEST(Metrics, ClassificationBadInput) {
  Accuracy acc({.num_classes = 3});
  expect_error<IndexError>([&] { acc.update(ints({0, 1}), ints({0, 3})); }, "Accuracy");
  expect_error<IndexError>([&] { acc.update(ints({0, -1}), ints({0, 1})); }, "preds");
  expect_error<ShapeError>(
      [&] {
        acc.update(floats({1, 2, 3, 4}, {1, 4}), ints({0}));
      },
      "num_classes=3");
  expect_error<ShapeError>(
      [&] {
        acc.update(floats({1, 2, 3}, {1, 3}), ints({0, 1}));
      },
      "Accuracy");
  expect_error<DTypeError>([&] { acc.update(floats({0, 1}, {2}), ints({0, 1})); }, "Accuracy");
  expect_error<DTypeError>([&] { acc.update(ints({0, 1}), floats({0, 1}, {2})); }, "target");
  expect_error<ValueError>([&] { acc.update(ints({0}), Tensor()); }, "Accuracy");
  expect_error<ValueError>([&] { Accuracy({.top_k = 0}); }, "top_k");
  expect_error<ValueError>([&] { Accuracy({.num_classes = 2, .top_k = 3}); }, "top_k");
  expect_error<ValueError>([&] { F1Score({.num_classes = 0}); }, "F1Score");
  expect_error<ValueError>([&] { Accuracy({.average = Average::kMacro}); }, "num_classes");
  Accuracy open;  // no num_classes: any class index >= 0, nothing allocated per class
  open.update(ints({int64_t{1} << 40}), ints({int64_t{1} << 40}));
  EXPECT_DOUBLE_EQ(open.compute(), 1.0);
  F1Score f1({.num_classes = 2});
  expect_error<IndexError>([&] { f1.update(ints({0, 2}), ints({0, 1})); }, "F1Score");
  ConfusionMatrix cm({.num_classes = 2});
  expect_error<IndexError>([&] { cm.update(ints({0}), ints({5})); }, "ConfusionMatrix");
  EXPECT_EQ(cm.compute().to_vector<int64_t>(), std::vector<int64_t>(4, 0));  // nothing added
  Accuracy top2({.top_k = 2});
  expect_error<ValueError>([&] { top2.update(ints({0}), ints({0})); }, "top_k");
  // A failed update leaves the state as it was.
  Accuracy a2({.num_classes = 2});
  a2.update(ints({0}), ints({0}));
  EXPECT_THROW(a2.update(ints({0, 1}), ints({0, 2})), IndexError);
  EXPECT_DOUBLE_EQ(a2.compute(), 1.0);
  EXPECT_EQ(a2.count(), 1);
}

TEST(Metrics, MeanSquaredError) {
  MeanSquaredError mse;
  EXPECT_TRUE(std::isnan(mse.compute()));
  EXPECT_DOUBLE_EQ(mse.forward(floats({1, 2, 3}, {3}), floats({1, 0, 0}, {3})), 13.0 / 3);
  mse.update(from_vector<double>({2}, {1, 1}), from_vector<int64_t>({0}, {1, 1}));
  EXPECT_DOUBLE_EQ(mse.compute(), 17.0 / 4);
  MeanSquaredError rmse({.squared = false});
  rmse.update(floats({3, 4}, {2}), floats({0, 0}, {2}));
  EXPECT_DOUBLE_EQ(rmse.compute(), std::sqrt(12.5));
  expect_error<ShapeError>(
      [&] {
        mse.update(floats({1, 2}, {2}), floats({1, 2}, {1, 2}));
      },
      "MeanSquaredError");
}

TEST(Metrics, MeanAndSum) {
  MeanMetric mean;
  EXPECT_TRUE(std::isnan(mean.compute()));
  mean.update(2.0, 1);
  mean.update(4.0, 3);  // a batch of 3 samples whose mean loss is 4
  EXPECT_DOUBLE_EQ(mean.compute(), 14.0 / 4);
  EXPECT_DOUBLE_EQ(mean.weight(), 4);
  mean.reset();
  mean.update(floats({1, 2, 3}, {3}));
  EXPECT_DOUBLE_EQ(mean.compute(), 2.0);
  mean.update(floats({6}, {1}), scalar_tensor(3.0));
  EXPECT_DOUBLE_EQ(mean.compute(), 24.0 / 6);
  mean.reset();
  mean.update(floats({1, 3}, {2}), floats({3, 1}, {2}));
  EXPECT_DOUBLE_EQ(mean.compute(), 1.5);
  expect_error<ValueError>([&] { mean.update(1.0, -1.0); }, "MeanMetric");
  expect_error<ValueError>(
      [&] {
        mean.update(floats({1, 1}, {2}), floats({1, NAN}, {2}));
      },
      "weights");
  EXPECT_DOUBLE_EQ(mean.compute(), 1.5);  // the failed updates added nothing
  expect_error<ShapeError>(
      [&] {
        mean.update(floats({1, 1}, {2}), floats({1, 1, 1}, {3}));
      },
      "MeanMetric");
  mean.update(NAN, 1.0);  // a diverged loss shows up
  EXPECT_TRUE(std::isnan(mean.compute()));

  SumMetric sum;
  EXPECT_TRUE(std::isnan(sum.compute()));
  sum.update(1.5);
  sum.update(from_vector<int64_t>({1, 2, 3}, {3}));
  EXPECT_DOUBLE_EQ(sum.compute(), 7.5);
  sum.reset();
  sum.update(floats({}, {0}));
  EXPECT_DOUBLE_EQ(sum.compute(), 0.0);
}

}  // namespace
}  // namespace ath::train
