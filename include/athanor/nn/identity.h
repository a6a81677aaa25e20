// nn::Identity: returns its input unchanged (the same tensor handle); a placeholder where an
// architecture may or may not have a layer, e.g. an optional projection.
//
//   #include "athanor/nn/linear.h"
//   int64_t in = 64, out = 64;
//   std::shared_ptr<nn::Module> proj;
//   if (in != out) proj = std::make_shared<nn::Linear>(nn::LinearOptions{.in = in, .out = out});
//   else proj = std::make_shared<nn::Identity>();
//   Tensor x = randn({4, in});
//   assert((*proj)(x).is_same(x));                  // Identity: the same handle back
#pragma once

#include "athanor/nn/module.h"

namespace ath::nn {

class Identity : public Module {
 public:
  Identity() : Module("Identity") {}
  Tensor forward(const Tensor& x) override { return x; }
};

}  // namespace ath::nn
