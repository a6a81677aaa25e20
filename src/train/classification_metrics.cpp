#include "athanor/train/classification_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "athanor/core/error.h"
#include "athanor/ops/creation.h"
#include "classification_input.h"

namespace ath::train {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double safe_div(double num, double den) { return den == 0 ? 0.0 : num / den; }

// Counts of one decoded batch. Per-class counts only with a known class count (every class in
// the batch has been range-checked against it); plain accuracy needs just correct / total.
detail::ClassCounts count_batch(const detail::ClassificationBatch& b, bool per_class) {
  detail::ClassCounts c;
  if (per_class) c.resize(b.num_classes);
  const bool top_k = !b.in_top_k.empty();
  for (std::size_t i = 0; i < b.target.size(); ++i) {
    const int64_t t = b.target[i], p = b.pred[i];
    const bool hit = top_k ? b.in_top_k[i] != 0 : t == p;
    ++c.samples;
    c.correct += hit;
    if (!per_class) continue;
    if (hit) {
      ++c.tp[t];
    } else {
      ++c.fn[t];
      if (!top_k) ++c.fp[p];
    }
  }
  return c;
}

void check_options(const char* metric, int64_t num_classes, std::optional<int64_t> ignore_index) {
  ATH_CHECK(num_classes >= 1, ValueError, "{}: num_classes must be >= 1, got {}", metric,
            num_classes);
  (void)ignore_index;  // any value is fine: it only removes samples
}

}  // namespace

void detail::ClassCounts::resize(int64_t num_classes) {
  const auto n = static_cast<std::size_t>(num_classes);
  if (tp.size() >= n) return;
  tp.resize(n, 0);
  fp.resize(n, 0);
  fn.resize(n, 0);
}

void detail::ClassCounts::merge(const ClassCounts& o) {
  resize(static_cast<int64_t>(o.tp.size()));
  for (std::size_t k = 0; k < o.tp.size(); ++k) {
    tp[k] += o.tp[k];
    fp[k] += o.fp[k];
    fn[k] += o.fn[k];
  }
  samples += o.samples;
  correct += o.correct;
}

// ---- Accuracy ----

Accuracy::Accuracy(AccuracyOptions options) : options_(options) {
  ATH_CHECK(options_.num_classes >= 0, ValueError, "Accuracy: num_classes must be >= 0, got {}",
            options_.num_classes);
  ATH_CHECK(options_.top_k >= 1, ValueError, "Accuracy: top_k must be >= 1, got {}",
            options_.top_k);
  ATH_CHECK(options_.num_classes == 0 || options_.top_k <= options_.num_classes, ValueError,
            "Accuracy: top_k={} exceeds num_classes={}", options_.top_k, options_.num_classes);
  ATH_CHECK(options_.average == Average::kMicro || options_.num_classes >= 1, ValueError,
            "Accuracy: average=kMacro needs num_classes");
}

detail::ClassCounts Accuracy::batch_counts(const Tensor& preds, const Tensor& target) const {
  auto b = detail::decode_classification("Accuracy", preds, target, options_.num_classes,
                                         options_.top_k, options_.ignore_index);
  return count_batch(b, options_.average == Average::kMacro);
}

double Accuracy::value(const detail::ClassCounts& c) const {
  if (c.samples == 0) return kNaN;
  if (options_.average == Average::kMicro) {
    return static_cast<double>(c.correct) / static_cast<double>(c.samples);
  }
  // torchmetrics: with top_k 1 a class counts when tp + fp + fn > 0, with top_k > 1 when it
  // occurs as a target.
  double sum = 0;
  int64_t classes = 0;
  for (std::size_t k = 0; k < c.tp.size(); ++k) {
    const int64_t occurs = options_.top_k == 1 ? c.tp[k] + c.fp[k] + c.fn[k] : c.tp[k] + c.fn[k];
    if (occurs == 0) continue;
    sum += safe_div(static_cast<double>(c.tp[k]), static_cast<double>(c.tp[k] + c.fn[k]));
    ++classes;
  }
  return sum / static_cast<double>(classes);
}

void Accuracy::update(const Tensor& preds, const Tensor& target) {
  counts_.merge(batch_counts(preds, target));
}

double Accuracy::forward(const Tensor& preds, const Tensor& target) {
  detail::ClassCounts b = batch_counts(preds, target);
  counts_.merge(b);
  return value(b);
}

std::vector<double> detail::ClassCounts::state() const {
  std::vector<double> v{static_cast<double>(samples), static_cast<double>(correct)};
  for (std::size_t k = 0; k < tp.size(); ++k) {
    v.push_back(static_cast<double>(tp[k]));
    v.push_back(static_cast<double>(fp[k]));
    v.push_back(static_cast<double>(fn[k]));
  }
  return v;
}

namespace {

// A count read back from a state: a non-negative whole number (exact in a double up to 2^53).
int64_t state_count(const std::string& metric, double v) {
  ATH_CHECK(v >= 0 && v <= 9007199254740992.0 && std::floor(v) == v, ValueError,
            "{}: load_state: {} is not a count", metric, v);
  return static_cast<int64_t>(v);
}

}  // namespace

void detail::ClassCounts::load_state(const char* metric, std::span<const double> v,
                                     int64_t num_classes) {
  ATH_CHECK(v.size() >= 2 && (v.size() - 2) % 3 == 0, ValueError,
            "{}: load_state: expected 2 + 3 x classes numbers, got {}", metric, v.size());
  const auto classes = static_cast<int64_t>((v.size() - 2) / 3);
  ATH_CHECK(num_classes == 0 || classes <= num_classes, ValueError,
            "{}: load_state: the state has {} classes, the metric {}", metric, classes,
            num_classes);
  ClassCounts c;
  c.samples = state_count(metric, v[0]);
  c.correct = state_count(metric, v[1]);
  c.resize(std::max(classes, num_classes));
  for (std::size_t k = 0; k < static_cast<std::size_t>(classes); ++k) {
    c.tp[k] = state_count(metric, v[2 + 3 * k]);
    c.fp[k] = state_count(metric, v[3 + 3 * k]);
    c.fn[k] = state_count(metric, v[4 + 3 * k]);
  }
  *this = std::move(c);
}

double Accuracy::compute() const { return value(counts_); }
void Accuracy::load_state(std::span<const double> values) {
  counts_.load_state("Accuracy", values, options_.num_classes);
}
void Accuracy::reset() { counts_ = {}; }

// ---- Precision / Recall / F1 ----

StatScoresMetric::StatScoresMetric(const char* name, ClassificationOptions options)
    : options_(options) {
  check_options(name, options_.num_classes, options_.ignore_index);
  counts_.resize(options_.num_classes);
}

void StatScoresMetric::update(const Tensor& preds, const Tensor& target) { forward(preds, target); }

double StatScoresMetric::forward(const Tensor& preds, const Tensor& target) {
  const std::string n = name();
  auto b = detail::decode_classification(n.c_str(), preds, target, options_.num_classes, 1,
                                         options_.ignore_index);
  detail::ClassCounts c = count_batch(b, true);
  counts_.merge(c);
  return value(c);
}

double StatScoresMetric::value(const detail::ClassCounts& c) const {
  if (c.samples == 0) return kNaN;
  if (options_.average == Average::kMicro) {
    int64_t tp = 0, fp = 0, fn = 0;
    for (std::size_t k = 0; k < c.tp.size(); ++k) {
      tp += c.tp[k];
      fp += c.fp[k];
      fn += c.fn[k];
    }
    return score(tp, fp, fn);
  }
  double sum = 0;
  int64_t classes = 0;
  for (std::size_t k = 0; k < c.tp.size(); ++k) {
    if (c.tp[k] + c.fp[k] + c.fn[k] == 0) continue;  // absent class: not in the mean
    sum += score(c.tp[k], c.fp[k], c.fn[k]);
    ++classes;
  }
  return sum / static_cast<double>(classes);
}

double StatScoresMetric::compute() const { return value(counts_); }

void StatScoresMetric::reset() {
  counts_ = {};
  counts_.resize(options_.num_classes);
}

void StatScoresMetric::load_state(std::span<const double> values) {
  counts_.load_state(name().c_str(), values, options_.num_classes);
}

double Precision::score(int64_t tp, int64_t fp, int64_t) const {
  return safe_div(static_cast<double>(tp), static_cast<double>(tp + fp));
}
double Recall::score(int64_t tp, int64_t, int64_t fn) const {
  return safe_div(static_cast<double>(tp), static_cast<double>(tp + fn));
}
double F1Score::score(int64_t tp, int64_t fp, int64_t fn) const {
  return safe_div(2.0 * static_cast<double>(tp), static_cast<double>(2 * tp + fp + fn));
}

// ---- ConfusionMatrix ----

ConfusionMatrix::ConfusionMatrix(ConfusionMatrixOptions options) : options_(options) {
  check_options("ConfusionMatrix", options_.num_classes, options_.ignore_index);
  // The table is C x C int64: refuse sizes that could only end in an allocation failure.
  ATH_CHECK(options_.num_classes <= 16384, ValueError,
            "ConfusionMatrix: num_classes={} needs a {}x{} table (over 2 GB)", options_.num_classes,
            options_.num_classes, options_.num_classes);
  reset();
}

void ConfusionMatrix::update(const Tensor& preds, const Tensor& target) {
  auto b = detail::decode_classification("ConfusionMatrix", preds, target, options_.num_classes, 1,
                                         options_.ignore_index);
  const int64_t c = options_.num_classes;
  for (std::size_t i = 0; i < b.target.size(); ++i) ++table_[b.target[i] * c + b.pred[i]];
}

Tensor ConfusionMatrix::compute() const {
  const int64_t c = options_.num_classes;
  if (options_.normalize == Normalize::kNone) return from_vector<int64_t>(table_, {c, c});
  std::vector<double> out(table_.size());
  std::vector<double> row(c, 0), col(c, 0);
  double all = 0;
  for (int64_t i = 0; i < c; ++i) {
    for (int64_t j = 0; j < c; ++j) {
      const auto v = static_cast<double>(table_[i * c + j]);
      row[i] += v;
      col[j] += v;
      all += v;
    }
  }
  for (int64_t i = 0; i < c; ++i) {
    for (int64_t j = 0; j < c; ++j) {
      const double den = options_.normalize == Normalize::kTrue   ? row[i]
                         : options_.normalize == Normalize::kPred ? col[j]
                                                                  : all;
      out[i * c + j] = safe_div(static_cast<double>(table_[i * c + j]), den);
    }
  }
  return from_vector<double>(out, {c, c});
}

void ConfusionMatrix::reset() {
  table_.assign(static_cast<std::size_t>(options_.num_classes * options_.num_classes), 0);
}

std::vector<double> ConfusionMatrix::state() const {
  return std::vector<double>(table_.begin(), table_.end());
}

void ConfusionMatrix::load_state(std::span<const double> values) {
  ATH_CHECK(values.size() == table_.size(), ValueError,
            "ConfusionMatrix: load_state: expected {} numbers ({} x {}), got {}", table_.size(),
            options_.num_classes, options_.num_classes, values.size());
  std::vector<int64_t> table(values.size());
  for (std::size_t i = 0; i < values.size(); ++i)
    table[i] = state_count("ConfusionMatrix", values[i]);
  table_ = std::move(table);
}

}  // namespace ath::train
