// OneCycleLR: the 1cycle policy (torch.optim.lr_scheduler.OneCycleLR), stepped once per batch.
// The lr warms up from max_lr / div_factor to max_lr over pct_start of the steps, then anneals
// to initial_lr / final_div_factor (three_phase: back to initial_lr first, then down). With
// cycle_momentum the optimizer's momentum (SGD, RMSprop) or betas[0] (the Adam family) moves
// the opposite way between max_momentum and base_momentum.
//
//   #include "athanor/nn/linear.h"
//   nn::Linear model({.in = 4, .out = 2});
//   int epochs = 2, batches = 3;
//   optim::SGD opt(model.parameters(), {.lr = 0.1, .momentum = 0.9});
//   optim::OneCycleLR sched(opt, {.max_lr = 0.1, .total_steps = epochs * batches});
//   for (int step = 0; step < epochs * batches; ++step) {
//     opt.zero_grad();
//     model(randn({8, 4})).pow(2).mean().backward();
//     opt.step();
//     sched.step();
//   }
//
// It writes "initial_lr", "max_lr", "min_lr" (and "max_momentum", "base_momentum") into each
// param group, as PyTorch does. Stepping past total_steps is a ValueError.
#pragma once

#include "athanor/optim/lr_scheduler.h"

namespace ath::optim {

enum class AnnealStrategy { Cos, Linear };

struct OneCycleLROptions {
  PerGroup max_lr;          // required
  int64_t total_steps = 0;  // or epochs * steps_per_epoch
  int64_t epochs = 0;
  int64_t steps_per_epoch = 0;
  double pct_start = 0.3;  // in [0, 1]
  AnnealStrategy anneal_strategy = AnnealStrategy::Cos;
  bool cycle_momentum = true;
  PerGroup base_momentum = 0.85;
  PerGroup max_momentum = 0.95;
  double div_factor = 25.0;
  double final_div_factor = 1e4;
  bool three_phase = false;
  int64_t last_epoch = -1;
};

class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& opt, OneCycleLROptions options);
  int64_t total_steps() const { return total_steps_; }

 private:
  struct Phase {
    double end_step;
    const char *start_lr, *end_lr, *start_momentum, *end_momentum;
  };
  void make_phases();
  double anneal(double start, double end, double pct) const;
  std::vector<double> get_lr() override;
  void save_fields(nlohmann::json& out) const override;
  void load_fields(const nlohmann::json& in) override;

  int64_t total_steps_;
  double pct_start_;
  AnnealStrategy anneal_;
  bool three_phase_;
  bool cycle_momentum_;
  bool use_beta1_ = false;
  std::vector<Phase> phases_;
};

}  // namespace ath::optim
