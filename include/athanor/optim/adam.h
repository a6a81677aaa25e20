// Adam and AdamW (torch.optim.Adam / AdamW), with amsgrad, weight decay and maximize.
//
//   #include "athanor/nn/linear.h"
//   nn::Linear model({.in = 4, .out = 2});
//   optim::Adam adam(model.parameters(), {.lr = 1e-3, .betas = {0.9, 0.98}, .amsgrad = true});
//   optim::AdamW adamw(model.parameters(), {.lr = 1e-3, .weight_decay = 0.05});
//   model(randn({8, 4})).pow(2).mean().backward();
//   adam.step();   // or adamw.step()
//
// Per parameter at step t, with g its gradient (negated when maximize):
//   // Adam:  g += weight_decay * p          AdamW: p *= 1 - lr * weight_decay
//   // m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2;  vmax = max(vmax, v) (amsgrad)
//   // p -= lr / (1 - beta1^t) * m / (sqrt(v or vmax) / sqrt(1 - beta2^t) + eps)
// State: "step", "exp_avg", "exp_avg_sq", and "max_exp_avg_sq" with amsgrad.
#pragma once

#include "athanor/optim/optimizer.h"

namespace ath::optim {

struct AdamOptions {
  double lr = 1e-3;
  Betas betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 0.0;
  bool amsgrad = false;
  bool maximize = false;
};

struct AdamWOptions {
  double lr = 1e-3;
  Betas betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 1e-2;
  bool amsgrad = false;
  bool maximize = false;
};

extern template class OptimizerWith<AdamOptions>;
extern template class OptimizerWith<AdamWOptions>;

class Adam : public OptimizerWith<AdamOptions> {
 public:
  Adam(const std::vector<Tensor>& params, AdamOptions options = {});
  Adam(const std::vector<ParamGroup>& groups, AdamOptions options = {});
  // Braced groups: Adam({{.params = a}, {.params = b, .lr = 0.1}}, {...}).
  Adam(std::initializer_list<ParamGroup> groups, AdamOptions options = {})
      : Adam(std::vector<ParamGroup>(groups), options) {}

 private:
  void step_group(std::size_t g) override;
};

class AdamW : public OptimizerWith<AdamWOptions> {
 public:
  AdamW(const std::vector<Tensor>& params, AdamWOptions options = {});
  AdamW(const std::vector<ParamGroup>& groups, AdamWOptions options = {});
  // Braced groups: AdamW({{.params = a}, {.params = b, .lr = 0.1}}, {...}).
  AdamW(std::initializer_list<ParamGroup> groups, AdamWOptions options = {})
      : AdamW(std::vector<ParamGroup>(groups), options) {}

 private:
  void step_group(std::size_t g) override;
};

}  // namespace ath::optim
