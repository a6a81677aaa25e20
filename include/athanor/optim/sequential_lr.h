// Schedulers made of schedulers: SequentialLR runs one after another, switching at milestones;
// ChainedScheduler steps all of them every time (their factors multiply).
//
//   #include "athanor/nn/linear.h"
//   nn::Linear model({.in = 4, .out = 2});
//   optim::SGD opt(model.parameters(), {.lr = 0.1});
//   optim::LinearLR warmup(opt, {.start_factor = 0.1, .total_iters = 5});
//   optim::CosineAnnealingLR cosine(opt, {.T_max = 95});
//   optim::SequentialLR sched(opt, {warmup, cosine}, {5});
//   for (int epoch = 0; epoch < 100; ++epoch) sched.step();   // 5 warm-up epochs, then cosine
//
// The children are held by reference (they must outlive the composite) and must share its
// optimizer. State dicts nest the children's under "_schedulers".
#pragma once

#include <functional>

#include "athanor/optim/lr_scheduler.h"

namespace ath::optim {

using SchedulerRefs = std::vector<std::reference_wrapper<LRScheduler>>;

class SequentialLR : public LRScheduler {
 public:
  SequentialLR(Optimizer& opt, SchedulerRefs schedulers, std::vector<int64_t> milestones,
               int64_t last_epoch = -1);
  void step() override;
  void step(double epoch) override;  // NotImplementedError, as PyTorch has none
  nlohmann::json state_dict() const override;
  void load_state_dict(const nlohmann::json& state) override;

 private:
  std::vector<double> get_lr() override { return group_lrs(); }
  SchedulerRefs schedulers_;
  std::vector<int64_t> milestones_;
};

class ChainedScheduler : public LRScheduler {
 public:
  explicit ChainedScheduler(SchedulerRefs schedulers);
  void step() override;
  void step(double epoch) override;  // NotImplementedError, as PyTorch has none
  nlohmann::json state_dict() const override;
  void load_state_dict(const nlohmann::json& state) override;

 private:
  std::vector<double> get_lr() override { return group_lrs(); }
  SchedulerRefs schedulers_;
};

}  // namespace ath::optim
