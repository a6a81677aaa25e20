// Normalization layers: LayerNorm here; BatchNorm and GroupNorm live beside it.
//
//   nn::LayerNorm ln({.shape = {128}});
//   Tensor x = randn({4, 10, 128});
//   Tensor y = ln(x);                       // normalizes over the last dim of x [*, 128]
#pragma once

#include "athanor/nn/module.h"

namespace ath::nn {

struct LayerNormOptions {
  Shape shape;  // PyTorch's normalized_shape: the trailing dims normalized over
  double eps = 1e-5;
  bool elementwise_affine = true;
  DType dtype = kFloat32;
};

class LayerNorm : public Module {
 public:
  explicit LayerNorm(LayerNormOptions options);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  LayerNormOptions options;
  Tensor weight;  // ones(shape), when elementwise_affine
  Tensor bias;    // zeros(shape)
};

}  // namespace ath::nn
