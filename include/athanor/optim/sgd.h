// SGD with momentum, dampening, Nesterov momentum, weight decay and maximize: torch.optim.SGD.
//
//   #include "athanor/nn/linear.h"
//   nn::Linear model({.in = 4, .out = 2});
//   optim::SGD opt(model.parameters(), {.lr = 0.1, .momentum = 0.9, .nesterov = true});
//   model(randn({8, 4})).pow(2).mean().backward();
//   opt.step();
//
// Per parameter, with g its gradient (negated when maximize):
//   // g += weight_decay * p;  buf = momentum * buf + (1 - dampening) * g   (buf = g at first)
//   // g = nesterov ? g + momentum * buf : buf;  p -= lr * g
// State: "momentum_buffer" (only when momentum != 0).
#pragma once

#include "athanor/optim/optimizer.h"

namespace ath::optim {

struct SGDOptions {
  double lr = kRequired;  // no default, as in PyTorch
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;  // needs momentum > 0 and dampening == 0
  bool maximize = false;
};

extern template class OptimizerWith<SGDOptions>;

class SGD : public OptimizerWith<SGDOptions> {
 public:
  SGD(const std::vector<Tensor>& params, SGDOptions options);
  SGD(const std::vector<ParamGroup>& groups, SGDOptions options = {});
  // Braced groups: SGD({{.params = a}, {.params = b, .lr = 0.1}}, {...}).
  SGD(std::initializer_list<ParamGroup> groups, SGDOptions options = {})
      : SGD(std::vector<ParamGroup>(groups), options) {}

 private:
  void step_group(std::size_t g) override;
};

}  // namespace ath::optim
