// nn::Flatten and nn::Unflatten: reshaping layers (views where strides allow), as PyTorch's.
//
//   Tensor x = randn({2, 16, 7, 7});
//   nn::Flatten flat;                              // start_dim = 1: [N, C, H, W] -> [N, C*H*W]
//   nn::Unflatten unflat({.dim = 1, .sizes = {16, 7, 7}});   // [N, 784] -> [N, 16, 7, 7]
//   assert(flat(x).shape() == Shape({2, 784}) && unflat(flat(x)).shape() == x.shape());
#pragma once

#include "athanor/nn/module.h"

namespace ath::nn {

struct FlattenOptions {
  int64_t start_dim = 1;  // 1 keeps the batch dim, unlike the functional flatten's 0
  int64_t end_dim = -1;
};

class Flatten : public Module {
 public:
  explicit Flatten(FlattenOptions options = {}) : Module("Flatten"), options(options) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  FlattenOptions options;
};

struct UnflattenOptions {
  int64_t dim = 0;
  Shape sizes;  // PyTorch's unflattened_size; one entry may be -1
};

class Unflatten : public Module {
 public:
  explicit Unflatten(UnflattenOptions options);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  UnflattenOptions options;
};

}  // namespace ath::nn
