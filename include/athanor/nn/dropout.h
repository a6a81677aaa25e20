// nn::Dropout: zeroes elements with probability p while training (scaling the rest by
// 1 / (1 - p)); the identity in eval mode. Masks come from Philox, so a seed fixes them.
//
//   nn::Dropout drop({.p = 0.1});
//   Tensor x = ones({4, 8});
//   Tensor y = drop(x);             // training: about 10% zeros, the rest 1 / 0.9
//   drop.eval();
//   assert(drop(x).is_same(x));     // eval: x itself
#pragma once

#include "athanor/nn/module.h"

namespace ath::nn {

struct DropoutOptions {
  double p = 0.5;
};

class Dropout : public Module {
 public:
  explicit Dropout(DropoutOptions options = {});
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  DropoutOptions options;
};

}  // namespace ath::nn
