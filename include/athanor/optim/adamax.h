// Adamax (torch.optim.Adamax): Adam with an infinity-norm second moment.
//
//   #include "athanor/nn/linear.h"
//   nn::Linear model({.in = 4, .out = 2});
//   optim::Adamax opt(model.parameters(), {.lr = 2e-3});
//   model(randn({8, 4})).pow(2).mean().backward();
//   opt.step();
//
// Per parameter at step t, with g its gradient (negated when maximize) plus weight_decay * p:
//   // m = beta1 m + (1 - beta1) g;  u = max(beta2 u, |g| + eps);  p -= lr / (1 - beta1^t) * m / u
// State: "step", "exp_avg", "exp_inf".
#pragma once

#include "athanor/optim/optimizer.h"

namespace ath::optim {

struct AdamaxOptions {
  double lr = 2e-3;
  Betas betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 0.0;
  bool maximize = false;
};

extern template class OptimizerWith<AdamaxOptions>;

class Adamax : public OptimizerWith<AdamaxOptions> {
 public:
  Adamax(const std::vector<Tensor>& params, AdamaxOptions options = {});
  Adamax(const std::vector<ParamGroup>& groups, AdamaxOptions options = {});
  // Braced groups: Adamax({{.params = a}, {.params = b, .lr = 0.1}}, {...}).
  Adamax(std::initializer_list<ParamGroup> groups, AdamaxOptions options = {})
      : Adamax(std::vector<ParamGroup>(groups), options) {}

 private:
  void step_group(std::size_t g) override;
};

}  // namespace ath::optim
