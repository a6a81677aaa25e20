// NAdam (torch.optim.NAdam 1.13): Adam with Nesterov momentum and a momentum schedule.
//
//   #include "athanor/nn/linear.h"
//   nn::Linear model({.in = 4, .out = 2});
//   optim::NAdam opt(model.parameters(), {.lr = 2e-3, .momentum_decay = 4e-3});
//   model(randn({8, 4})).pow(2).mean().backward();
//   opt.step();
//
// Per parameter at step t, with g its gradient plus weight_decay * p:
//   // mu_t = beta1 (1 - 0.5 * 0.96^(t momentum_decay));  mu_product *= mu_t
//   // m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2
//   // d = sqrt(v / (1 - beta2^t)) + eps
//   // p -= lr (1 - mu_t) / (1 - mu_product) g / d
//   //      + lr mu_{t+1} / (1 - mu_product mu_t mu_{t+1}) m / d
// This is PyTorch 1.13's formula exactly, including its mu_t factor in the second denominator
// (later releases multiply by mu_{t+1} only) and its float32 mu_product, whatever the
// parameters' dtype. PyTorch 1.13's NAdam has no maximize option, so neither does this one.
// State: "step", "mu_product" (scalars), "exp_avg", "exp_avg_sq".
#pragma once

#include "athanor/optim/optimizer.h"

namespace ath::optim {

struct NAdamOptions {
  double lr = 2e-3;
  Betas betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 0.0;
  double momentum_decay = 4e-3;
};

extern template class OptimizerWith<NAdamOptions>;

class NAdam : public OptimizerWith<NAdamOptions> {
 public:
  NAdam(const std::vector<Tensor>& params, NAdamOptions options = {});
  NAdam(const std::vector<ParamGroup>& groups, NAdamOptions options = {});
  // Braced groups: NAdam({{.params = a}, {.params = b, .lr = 0.1}}, {...}).
  NAdam(std::initializer_list<ParamGroup> groups, NAdamOptions options = {})
      : NAdam(std::vector<ParamGroup>(groups), options) {}

 private:
  void step_group(std::size_t g) override;
};

}  // namespace ath::optim
