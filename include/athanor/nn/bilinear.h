// nn::Bilinear: y = x1^T W x2 + b for each pair of rows, W [out, in1, in2], b [out], as
// PyTorch's Bilinear (weight and bias both ~ U(-1/sqrt(in1), 1/sqrt(in1))). Its forward takes
// two tensors, so it is called as bilinear(x1, x2); the one-tensor forward throws.
//
//   nn::Bilinear bil({.in1 = 16, .in2 = 8, .out = 4});
//   Tensor x1 = randn({2, 5, 16}), x2 = randn({2, 5, 8});
//   Tensor y = bil(x1, x2);          // x1 [*, 16], x2 [*, 8] (same leading dims) -> [*, 4]
#pragma once

#include "athanor/nn/module.h"

namespace ath::nn {

struct BilinearOptions {
  int64_t in1 = 0;  // PyTorch's in1_features
  int64_t in2 = 0;  // in2_features
  int64_t out = 0;  // out_features
  bool bias = true;
  DType dtype = kFloat32;
};

class Bilinear : public Module {
 public:
  explicit Bilinear(BilinearOptions options);
  using Module::forward;     // the one-tensor form: a ValueError naming Bilinear
  using Module::operator();  // likewise
  Tensor forward(const Tensor& x1, const Tensor& x2);
  // Runs forward(x1, x2), then the forward hooks, which see x1 as the input.
  Tensor operator()(const Tensor& x1, const Tensor& x2) {
    Tensor out = forward(x1, x2);
    run_forward_hooks(x1, out);
    return out;
  }
  std::string extra_repr() const override;
  void reset_parameters();

  BilinearOptions options;
  Tensor weight;  // [out, in1, in2]
  Tensor bias;    // [out], undefined when options.bias is false
};

}  // namespace ath::nn
