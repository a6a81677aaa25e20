#include "athanor/train/aggregation_metrics.h"

#include <cmath>
#include <limits>

#include "athanor/core/error.h"

namespace ath::train {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

void check_weight(double w) {
  ATH_CHECK(std::isfinite(w) && w >= 0, ValueError,
            "MeanMetric: weights must be finite and >= 0, got {}", w);
}

}  // namespace

// ---- MeanMetric ----

void MeanMetric::update(double value, double weight) {
  check_weight(weight);
  sum_ += value * weight;
  weight_ += weight;
}

void MeanMetric::update(const Tensor& value, const Tensor& weight) {
  ATH_CHECK(value.defined(), ValueError, "MeanMetric: value must be defined");
  ATH_CHECK(value.dtype() != kBool, DTypeError, "MeanMetric: value must be numeric, got bool");
  const std::vector<double> v = value.to_vector<double>();
  if (!weight.defined()) {
    for (double x : v) update(x, 1.0);
    return;
  }
  ATH_CHECK(weight.numel() == 1 || weight.shape() == value.shape(), ShapeError,
            "MeanMetric: weight {} must have one element or value's shape {}",
            to_string(weight.shape()), to_string(value.shape()));
  const std::vector<double> w = weight.to_vector<double>();
  for (double x : w) check_weight(x);  // all checked before any is added
  for (std::size_t i = 0; i < v.size(); ++i) update(v[i], w.size() == 1 ? w[0] : w[i]);
}

double MeanMetric::compute() const { return weight_ == 0 ? kNaN : sum_ / weight_; }

void MeanMetric::reset() { sum_ = weight_ = 0; }

namespace {
void check_state_size(const char* metric, std::span<const double> v, std::size_t n) {
  ATH_CHECK(v.size() == n, ValueError, "{}: load_state: expected {} numbers, got {}", metric, n,
            v.size());
}
}  // namespace

void MeanMetric::load_state(std::span<const double> values) {
  check_state_size("MeanMetric", values, 2);
  sum_ = values[0];
  weight_ = values[1];
}

// ---- SumMetric ----

void SumMetric::update(double value) {
  sum_ += value;
  seen_ = true;
}

void SumMetric::update(const Tensor& value) {
  ATH_CHECK(value.defined(), ValueError, "SumMetric: value must be defined");
  ATH_CHECK(value.dtype() != kBool, DTypeError, "SumMetric: value must be numeric, got bool");
  for (double x : value.to_vector<double>()) sum_ += x;
  seen_ = true;
}

double SumMetric::compute() const { return seen_ ? sum_ : kNaN; }

void SumMetric::load_state(std::span<const double> values) {
  check_state_size("SumMetric", values, 2);
  sum_ = values[0];
  seen_ = values[1] > 0;  // summed over ranks: how many had seen a value
}

void SumMetric::reset() {
  sum_ = 0;
  seen_ = false;
}

// ---- MeanSquaredError ----

namespace {
std::pair<double, int64_t> squared_errors(const Tensor& preds, const Tensor& target) {
  ATH_CHECK(preds.defined() && target.defined(), ValueError,
            "MeanSquaredError: preds and target must be defined");
  ATH_CHECK(preds.shape() == target.shape(), ShapeError,
            "MeanSquaredError: preds {} and target {} must have the same shape",
            to_string(preds.shape()), to_string(target.shape()));
  ATH_CHECK(preds.dtype() != kBool && target.dtype() != kBool, DTypeError,
            "MeanSquaredError: preds ({}) and target ({}) must be numeric", preds.dtype(),
            target.dtype());
  const std::vector<double> p = preds.to_vector<double>(), t = target.to_vector<double>();
  double sum = 0;
  for (std::size_t i = 0; i < p.size(); ++i) sum += (p[i] - t[i]) * (p[i] - t[i]);
  return {sum, static_cast<int64_t>(p.size())};
}
}  // namespace

double MeanSquaredError::value(double sum, int64_t count) const {
  if (count == 0) return kNaN;
  const double mse = sum / static_cast<double>(count);
  return options_.squared ? mse : std::sqrt(mse);
}

void MeanSquaredError::update(const Tensor& preds, const Tensor& target) {
  auto [sum, n] = squared_errors(preds, target);
  sum_ += sum;
  count_ += n;
}

double MeanSquaredError::forward(const Tensor& preds, const Tensor& target) {
  auto [sum, n] = squared_errors(preds, target);
  sum_ += sum;
  count_ += n;
  return value(sum, n);
}

double MeanSquaredError::compute() const { return value(sum_, count_); }

void MeanSquaredError::load_state(std::span<const double> values) {
  check_state_size("MeanSquaredError", values, 2);
  ATH_CHECK(values[1] >= 0 && std::floor(values[1]) == values[1], ValueError,
            "MeanSquaredError: load_state: {} is not a count", values[1]);
  sum_ = values[0];
  count_ = static_cast<int64_t>(values[1]);
}

void MeanSquaredError::reset() {
  sum_ = 0;
  count_ = 0;
}

}  // namespace ath::train
