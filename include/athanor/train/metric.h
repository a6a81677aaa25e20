// Metric: the base of the stateful metrics (torchmetrics' Metric). A metric accumulates over
// many update() calls (an epoch) and compute() gives the value over everything seen since the
// last reset(), weighted by the number of samples each update brought, not a mean of batch means.
//
//   #include "athanor/nn/linear.h"
//   #include "athanor/train/classification_metrics.h"
//   nn::Linear model({.in = 4, .out = 10});
//   std::vector<std::pair<Tensor, Tensor>> batches = {{randn({8, 4}), randint(0, 10, {8})},
//                                                     {randn({3, 4}), randint(0, 10, {3})}};
//   train::Accuracy acc({.num_classes = 10});
//   for (auto& [x, y] : batches) acc.update(model.forward(x), y);
//   double epoch_acc = acc.compute();     // correct / total over the epoch (11 samples)
//   acc.reset();
//   assert(std::isnan(acc.compute()));
//
// Before any sample has been seen, every scalar metric's compute() returns NaN.
//
// Data-parallel runs: each rank's metric sees its own shard of the data. compute_synced()
// (metric_sync.h) sums every rank's state — counts and sums, as torchmetrics' states with
// dist_reduce_fx="sum" — and computes over all of them.
#pragma once

#include <span>
#include <string>
#include <vector>

namespace ath::train {

class Metric {
 public:
  virtual ~Metric() = default;
  // The type name ("Accuracy"); errors from update() start with it.
  virtual std::string name() const = 0;
  virtual void reset() = 0;
  // The state compute() reads, as numbers that add across processes: counts and sums. A
  // metric whose classes grow with the data lays them out class by class at the end, so a
  // shorter state reads as one whose missing classes have no samples.
  virtual std::vector<double> state() const = 0;
  // Replaces the state with `values`, laid out as state() lays it out (longer: more classes);
  // a ValueError naming the metric for a layout it cannot hold.
  virtual void load_state(std::span<const double> values) = 0;
};

// A metric whose value is one number: what the Trainer logs at epoch end.
class ScalarMetric : public Metric {
 public:
  virtual double compute() const = 0;
};

// How per-class scores are combined into one number.
enum class Average {
  kMicro,  // count tp/fp/fn over all classes together, then score once
  kMacro,  // score each class, then the unweighted mean over classes that occurred
};

}  // namespace ath::train
