// nn::Linear: y = x W^T + b over the last dim, W [out, in], b [out]; PyTorch's initialisation
// (kaiming_uniform_ with a = sqrt(5), i.e. U(-1/sqrt(in), 1/sqrt(in)), and the same bound for b).
//
//   nn::Linear fc({.in = 784, .out = 10});
//   Tensor x = randn({2, 3, 784});
//   Tensor logits = fc(x);                 // x [*, 784] -> [*, 10]
#pragma once

#include "athanor/nn/module.h"

namespace ath::nn {

struct LinearOptions {
  int64_t in = 0;   // PyTorch's in_features
  int64_t out = 0;  // out_features
  bool bias = true;
  DType dtype = kFloat32;
};

class Linear : public Module {
 public:
  explicit Linear(LinearOptions options);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  // Re-draws weight and bias from PyTorch's default distributions.
  void reset_parameters();

  LinearOptions options;
  Tensor weight;  // [out, in]
  Tensor bias;    // [out], undefined when options.bias is false
};

}  // namespace ath::nn
