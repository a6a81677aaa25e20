// Aggregating metrics: weighted means and sums of numbers (the Trainer turns per-step losses into
// epoch values with MeanMetric weighted by batch size), and MeanSquaredError.
//
//   train::MeanMetric epoch_loss;
//   Tensor loss = full({1}, 0.5);                     // the loss of a batch of 32 samples
//   epoch_loss.update(loss.item<float>(), 32);        // weight = samples in the batch
//   epoch_loss.update(0.2, 8);                        // a last, short batch of 8
//   double mean = epoch_loss.compute();               // sum(v * w) / sum(w)
//   assert(std::abs(mean - 0.44) < 1e-9);             // (0.5 * 32 + 0.2 * 8) / 40
//
// NaN values propagate (a diverged loss shows as NaN, it is not silently dropped); negative or
// non-finite weights are a ValueError.
#pragma once

#include <cstdint>

#include "athanor/tensor/tensor.h"
#include "athanor/train/metric.h"

namespace ath::train {

class MeanMetric : public ScalarMetric {
 public:
  std::string name() const override { return "MeanMetric"; }
  void update(double value, double weight = 1.0);
  // Every element of `value` is one observation. `weight`: undefined (each weighs 1), one
  // element (the weight of each element), or value's shape.
  void update(const Tensor& value, const Tensor& weight = {});
  double compute() const override;
  void reset() override;
  std::vector<double> state() const override { return {sum_, weight_}; }
  void load_state(std::span<const double> values) override;
  double weight() const { return weight_; }  // total weight seen since the last reset

 private:
  double sum_ = 0, weight_ = 0;
};

class SumMetric : public ScalarMetric {
 public:
  std::string name() const override { return "SumMetric"; }
  void update(double value);
  void update(const Tensor& value);  // adds all elements
  double compute() const override;   // NaN before any update
  void reset() override;
  std::vector<double> state() const override { return {sum_, seen_ ? 1.0 : 0.0}; }
  void load_state(std::span<const double> values) override;

 private:
  double sum_ = 0;
  bool seen_ = false;
};

struct MeanSquaredErrorOptions {
  bool squared = true;  // false: the root of the mean (RMSE), as torchmetrics' squared=False
};

// mean((preds - target)^2) over every element of every update; preds and target have the same
// shape and any numeric dtype.
class MeanSquaredError : public ScalarMetric {
 public:
  explicit MeanSquaredError(MeanSquaredErrorOptions options = {}) : options_(options) {}
  std::string name() const override { return "MeanSquaredError"; }
  void update(const Tensor& preds, const Tensor& target);
  // The batch's own value, also accumulated (torchmetrics' forward).
  double forward(const Tensor& preds, const Tensor& target);
  double compute() const override;
  void reset() override;
  std::vector<double> state() const override { return {sum_, static_cast<double>(count_)}; }
  void load_state(std::span<const double> values) override;
  int64_t count() const { return count_; }

 private:
  double value(double sum, int64_t count) const;
  MeanSquaredErrorOptions options_;
  double sum_ = 0;
  int64_t count_ = 0;
};

}  // namespace ath::train
