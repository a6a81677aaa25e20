// nn::GroupNorm: normalizes each sample over groups of channels (statistics per sample and
// group, the same in training and eval), then applies a per-channel affine weight (ones) and
// bias (zeros), as PyTorch's GroupNorm.
//
//   nn::GroupNorm gn({.groups = 8, .channels = 32});
//   Tensor x = randn({2, 32, 5});
//   Tensor y = gn(x);                       // x [N, 32, *]
#pragma once

#include "athanor/nn/module.h"

namespace ath::nn {

struct GroupNormOptions {
  int64_t groups = 0;    // PyTorch's num_groups; must divide channels
  int64_t channels = 0;  // num_channels: dim 1 of the input
  double eps = 1e-5;
  bool affine = true;
  DType dtype = kFloat32;
};

class GroupNorm : public Module {
 public:
  explicit GroupNorm(GroupNormOptions options);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  GroupNormOptions options;
  Tensor weight;  // [channels], when affine
  Tensor bias;    // [channels], when affine
};

}  // namespace ath::nn
