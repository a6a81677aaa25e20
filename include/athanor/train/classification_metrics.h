// Multiclass classification metrics (torchmetrics' Multiclass* family): Accuracy (top-k),
// Precision, Recall, F1Score and ConfusionMatrix.
//
//   Tensor logits = randn({8, 10});              // a batch of 8 samples, 10 classes
//   Tensor labels = randint(0, 10, {8});
//   Tensor predicted = argmax(logits, 1);
//   train::Accuracy acc({.num_classes = 10});
//   train::F1Score f1({.num_classes = 10, .average = train::Average::kMacro});
//   acc.update(logits, labels);      // logits (N, C) float, labels (N) int64
//   f1.update(predicted, labels);    // or class indices (N) int, same shape as labels
//   double a = acc.compute(), f = f1.compute();
//
// Inputs, as torchmetrics: preds are scores (N, C, ...) of a floating dtype (logits or
// probabilities: the highest score is the prediction, ties going to the lowest class) with target
// (N, ...), or class indices with target's shape (an integer dtype). target holds class indices
// (an integer dtype). Wrong shapes are a ShapeError, wrong dtypes a DTypeError, a class outside
// [0, num_classes) an IndexError, each naming the metric. Samples whose target equals
// ignore_index are skipped.
//
// Macro averaging follows torchmetrics: a class that never occurs (in targets nor predictions)
// is left out of the mean; a class whose score is 0/0 otherwise counts as 0. For single-label
// multiclass, micro precision = micro recall = micro F1 = accuracy.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "athanor/tensor/tensor.h"
#include "athanor/train/metric.h"

namespace ath::train {

namespace detail {
// Per-class counts; every classification metric is a function of them (the confusion matrix
// keeps the full table instead).
struct ClassCounts {
  std::vector<int64_t> tp, fp, fn;
  int64_t samples = 0, correct = 0;
  void resize(int64_t num_classes);
  void merge(const ClassCounts& other);
  // [samples, correct, then tp, fp, fn of each class] (Metric::state).
  std::vector<double> state() const;
  // At least `num_classes` classes (0: as many as the state holds).
  void load_state(const char* metric, std::span<const double> v, int64_t num_classes);
};
}  // namespace detail

struct AccuracyOptions {
  // 0: taken from the scores' class dimension (class-index preds are then only checked >= 0);
  // kMacro needs it.
  int64_t num_classes = 0;
  int64_t top_k = 1;  // a sample is correct when its target is among the k highest scores
  // kMicro: correct / total (the usual accuracy; note torchmetrics' default is macro).
  // kMacro: the mean over classes of the per-class recall.
  Average average = Average::kMicro;
  std::optional<int64_t> ignore_index;
};

class Accuracy : public ScalarMetric {
 public:
  explicit Accuracy(AccuracyOptions options = {});
  std::string name() const override { return "Accuracy"; }
  void update(const Tensor& preds, const Tensor& target);
  double forward(const Tensor& preds, const Tensor& target);  // the batch's value, accumulated
  double compute() const override;
  void reset() override;
  std::vector<double> state() const override { return counts_.state(); }
  void load_state(std::span<const double> values) override;
  int64_t count() const { return counts_.samples; }

 private:
  detail::ClassCounts batch_counts(const Tensor& preds, const Tensor& target) const;
  double value(const detail::ClassCounts& c) const;
  AccuracyOptions options_;
  detail::ClassCounts counts_;
};

struct ClassificationOptions {
  int64_t num_classes = 0;            // required (>= 1)
  Average average = Average::kMacro;  // torchmetrics' default
  std::optional<int64_t> ignore_index;
};

// Shared machinery of Precision, Recall and F1Score.
class StatScoresMetric : public ScalarMetric {
 public:
  void update(const Tensor& preds, const Tensor& target);
  double forward(const Tensor& preds, const Tensor& target);  // the batch's value, accumulated
  double compute() const override;
  void reset() override;
  std::vector<double> state() const override { return counts_.state(); }
  void load_state(std::span<const double> values) override;
  int64_t count() const { return counts_.samples; }

 protected:
  StatScoresMetric(const char* name, ClassificationOptions options);
  // The score of one class (or of the micro totals) from its counts; den == 0 scores 0.
  virtual double score(int64_t tp, int64_t fp, int64_t fn) const = 0;

 private:
  double value(const detail::ClassCounts& c) const;
  ClassificationOptions options_;
  detail::ClassCounts counts_;
};

class Precision : public StatScoresMetric {  // tp / (tp + fp)
 public:
  explicit Precision(ClassificationOptions options) : StatScoresMetric("Precision", options) {}
  std::string name() const override { return "Precision"; }

 private:
  double score(int64_t tp, int64_t fp, int64_t fn) const override;
};

class Recall : public StatScoresMetric {  // tp / (tp + fn)
 public:
  explicit Recall(ClassificationOptions options) : StatScoresMetric("Recall", options) {}
  std::string name() const override { return "Recall"; }

 private:
  double score(int64_t tp, int64_t fp, int64_t fn) const override;
};

class F1Score : public StatScoresMetric {  // 2 tp / (2 tp + fp + fn)
 public:
  explicit F1Score(ClassificationOptions options) : StatScoresMetric("F1Score", options) {}
  std::string name() const override { return "F1Score"; }

 private:
  double score(int64_t tp, int64_t fp, int64_t fn) const override;
};

enum class Normalize {
  kNone,  // counts (int64)
  kTrue,  // each row (target class) sums to 1
  kPred,  // each column (predicted class) sums to 1
  kAll,   // the whole table sums to 1
};

struct ConfusionMatrixOptions {
  int64_t num_classes = 0;  // required (>= 1)
  Normalize normalize = Normalize::kNone;
  std::optional<int64_t> ignore_index;
};

// Row = target class, column = predicted class (torchmetrics' layout).
class ConfusionMatrix : public Metric {
 public:
  explicit ConfusionMatrix(ConfusionMatrixOptions options);
  std::string name() const override { return "ConfusionMatrix"; }
  void update(const Tensor& preds, const Tensor& target);
  // (C, C): int64 counts, or float64 when normalized (a 0/0 row or column gives zeros).
  Tensor compute() const;
  void reset() override;
  std::vector<double> state() const override;  // the table, row-major
  void load_state(std::span<const double> values) override;

 private:
  ConfusionMatrixOptions options_;
  std::vector<int64_t> table_;  // row-major C x C
};

}  // namespace ath::train
