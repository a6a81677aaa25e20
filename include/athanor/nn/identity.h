// nn::Identity: returns its input unchanged (the same tensor handle); a placeholder where an
// architecture may or may not have a layer, e.g. an optional projection.
//
//   std::shared_ptr<nn::Module> proj = need_proj ? std::make_shared<nn::Linear>(...)
//                                                : std::make_shared<nn::Identity>();
#pragma once

#include "athanor/nn/module.h"

namespace ath::nn {

class Identity : public Module {
 public:
  Identity() : Module("Identity") {}
  Tensor forward(const Tensor& x) override { return x; }
};

}  // namespace ath::nn
