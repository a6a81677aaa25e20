// Adagrad (torch.optim.Adagrad) with lr decay, an initial accumulator value and weight decay.
//
//   #include "athanor/nn/linear.h"
//   nn::Linear model({.in = 4, .out = 2});
//   optim::Adagrad opt(model.parameters(), {.lr = 0.1, .lr_decay = 1e-3});
//   model(randn({8, 4})).pow(2).mean().backward();
//   opt.step();
//
// Per parameter at step t, with g its gradient (negated when maximize) plus weight_decay * p:
//   // sum += g^2;  p -= lr / (1 + (t - 1) lr_decay) * g / (sqrt(sum) + eps)
// State: "step" and "sum" (created for every parameter when its group is added, as PyTorch
// does in the constructor).
#pragma once

#include "athanor/optim/optimizer.h"

namespace ath::optim {

struct AdagradOptions {
  double lr = 1e-2;
  double lr_decay = 0.0;
  double weight_decay = 0.0;
  double initial_accumulator_value = 0.0;
  double eps = 1e-10;
  bool maximize = false;
};

extern template class OptimizerWith<AdagradOptions>;

class Adagrad : public OptimizerWith<AdagradOptions> {
 public:
  Adagrad(const std::vector<Tensor>& params, AdagradOptions options = {});
  Adagrad(const std::vector<ParamGroup>& groups, AdagradOptions options = {});
  // Braced groups: Adagrad({{.params = a}, {.params = b, .lr = 0.1}}, {...}).
  Adagrad(std::initializer_list<ParamGroup> groups, AdagradOptions options = {})
      : Adagrad(std::vector<ParamGroup>(groups), options) {}

 private:
  void step_group(std::size_t g) override;
  void on_group_added(std::size_t g) override;
};

}  // namespace ath::optim
