// BatchNorm1d and BatchNorm2d: per-channel normalization with batch statistics while training
// and running statistics in eval, exactly as PyTorch's _BatchNorm: parameters weight (ones) and
// bias (zeros) when affine; buffers running_mean (zeros), running_var (ones) and
// num_batches_tracked (int64 scalar) when track_running_stats, so state_dict keys match.
//
//   Tensor x = randn({4, 32, 8, 8});
//   nn::BatchNorm2d bn({.features = 32});
//   Tensor y = bn(x);              // training: normalizes with x's statistics, updates the
//                                  // running ones: r = (1 - momentum) * r + momentum * batch
//   bn.eval();  y = bn(x);         // eval: uses running_mean / running_var
//   nn::BatchNorm1d avg({.features = 8, .momentum = std::nullopt});  // cumulative average
//   Tensor z = avg(randn({16, 8}));   // [N, 8] or [N, 8, L]
//
// Without running stats (track_running_stats = false) batch statistics are used in eval too.
// A data-parallel job computes the training statistics over every rank instead: see
// dist::SyncBatchNorm and dist::convert_sync_batchnorm, which plug in through BatchNormSync.
#pragma once

#include <memory>
#include <optional>

#include "athanor/nn/module.h"

namespace ath::nn {

struct BatchNormOptions {
  int64_t features = 0;  // PyTorch's num_features: the channel dim (dim 1) of the input
  double eps = 1e-5;
  // The running-stat update factor; nullopt (PyTorch's None) averages all batches seen so far
  // with equal weight (factor 1 / num_batches_tracked).
  std::optional<double> momentum = 0.1;
  bool affine = true;
  bool track_running_stats = true;
  DType dtype = kFloat32;
};

class BatchNorm;

// How a training-mode forward gets batch statistics that span more than this process. The dist
// layer implements it (nn cannot depend on dist); a layer with one installed hands it every
// training forward, after the input's rank was checked. It normalizes x with the group's
// statistics and updates the layer's running_mean and running_var with `factor` (the layer
// itself then counts num_batches_tracked, as in a local forward).
class BatchNormSync {
 public:
  virtual ~BatchNormSync() = default;
  virtual Tensor forward(const BatchNorm& layer, const Tensor& x, double factor) = 0;
};

// The shared implementation (PyTorch's _BatchNorm); the subclasses check the input's rank.
class BatchNorm : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  // Zeroes running_mean and num_batches_tracked, fills running_var with ones.
  void reset_running_stats();
  // reset_running_stats(), then weight = 1 and bias = 0.
  void reset_parameters();
  // Training statistics from `sync` (null: this process's batch only). Eval never uses it.
  void set_sync(std::shared_ptr<BatchNormSync> sync) { sync_ = std::move(sync); }
  const std::shared_ptr<BatchNormSync>& sync() const { return sync_; }

  BatchNormOptions options;
  Tensor weight;               // [features], when affine
  Tensor bias;                 // [features], when affine
  Tensor running_mean;         // [features], when track_running_stats
  Tensor running_var;          // [features], when track_running_stats
  Tensor num_batches_tracked;  // int64 scalar, when track_running_stats

 protected:
  BatchNorm(const char* type_name, BatchNormOptions options);
  virtual void check_input_dim(const Tensor& x) const = 0;

 private:
  std::shared_ptr<BatchNormSync> sync_;
};

// Input [N, C] or [N, C, L].
class BatchNorm1d : public BatchNorm {
 public:
  explicit BatchNorm1d(BatchNormOptions options) : BatchNorm("BatchNorm1d", options) {}

 protected:
  void check_input_dim(const Tensor& x) const override;
};

// Input [N, C, H, W].
class BatchNorm2d : public BatchNorm {
 public:
  explicit BatchNorm2d(BatchNormOptions options) : BatchNorm("BatchNorm2d", options) {}

 protected:
  void check_input_dim(const Tensor& x) const override;
};

}  // namespace ath::nn
