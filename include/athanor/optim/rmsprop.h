// RMSprop (torch.optim.RMSprop), optionally centered and with momentum.
//
//   #include "athanor/nn/linear.h"
//   nn::Linear model({.in = 4, .out = 2});
//   optim::RMSprop opt(model.parameters(), {.lr = 1e-2, .momentum = 0.9, .centered = true});
//   model(randn({8, 4})).pow(2).mean().backward();
//   opt.step();
//
// Per parameter, with g its gradient (negated when maximize) plus weight_decay * p:
//   // sq = alpha sq + (1 - alpha) g^2;  (centered) ga = alpha ga + (1 - alpha) g
//   // avg = sqrt(sq - ga^2 if centered else sq) + eps
//   // momentum > 0: buf = momentum buf + g / avg; p -= lr buf      else: p -= lr g / avg
// State: "step", "square_avg", "momentum_buffer" (momentum > 0), "grad_avg" (centered).
#pragma once

#include "athanor/optim/optimizer.h"

namespace ath::optim {

struct RMSpropOptions {
  double lr = 1e-2;
  double momentum = 0.0;
  double alpha = 0.99;
  double eps = 1e-8;
  bool centered = false;
  double weight_decay = 0.0;
  bool maximize = false;
};

extern template class OptimizerWith<RMSpropOptions>;

class RMSprop : public OptimizerWith<RMSpropOptions> {
 public:
  RMSprop(const std::vector<Tensor>& params, RMSpropOptions options = {});
  RMSprop(const std::vector<ParamGroup>& groups, RMSpropOptions options = {});
  // Braced groups: RMSprop({{.params = a}, {.params = b, .lr = 0.1}}, {...}).
  RMSprop(std::initializer_list<ParamGroup> groups, RMSpropOptions options = {})
      : RMSprop(std::vector<ParamGroup>(groups), options) {}

 private:
  void step_group(std::size_t g) override;
};

}  // namespace ath::optim
