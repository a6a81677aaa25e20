// Cosine schedules: CosineAnnealingLR (PyTorch's recursive form, so values match torch's even
// past T_max, where the lr climbs back up) and CosineAnnealingWarmRestarts (SGDR).
//
//   #include "athanor/nn/linear.h"
//   nn::Linear model({.in = 4, .out = 2});
//   optim::SGD opt(model.parameters(), {.lr = 0.1});
//   optim::CosineAnnealingLR sched(opt, {.T_max = 100, .eta_min = 1e-5});
//   optim::CosineAnnealingWarmRestarts warm(opt, {.T_0 = 10, .T_mult = 2});  // restarts 10, 30, 70
//   int epoch = 3, batch = 5, batches = 20;
//   warm.step(epoch + batch / double(batches));   // fractional epochs, as in PyTorch
#pragma once

#include "athanor/optim/lr_scheduler.h"

namespace ath::optim {

struct CosineAnnealingLROptions {
  int64_t T_max = 0;  // required, >= 1
  double eta_min = 0.0;
  int64_t last_epoch = -1;
};

class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& opt, CosineAnnealingLROptions options);

 private:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  void save_fields(nlohmann::json& out) const override;
  void load_fields(const nlohmann::json& in) override;
  int64_t T_max_;
  double eta_min_;
};

struct CosineAnnealingWarmRestartsOptions {
  int64_t T_0 = 0;     // required: epochs until the first restart, >= 1
  int64_t T_mult = 1;  // each period is T_mult times the previous one, >= 1
  double eta_min = 0.0;
  int64_t last_epoch = -1;
};

class CosineAnnealingWarmRestarts : public LRScheduler {
 public:
  CosineAnnealingWarmRestarts(Optimizer& opt, CosineAnnealingWarmRestartsOptions options);
  void step() override;
  // Any non-negative epoch, fractional ones included.
  void step(double epoch) override;
  double T_cur() const { return T_cur_; }
  int64_t T_i() const { return T_i_; }

 private:
  std::vector<double> get_lr() override;
  void save_fields(nlohmann::json& out) const override;
  void load_fields(const nlohmann::json& in) override;
  int64_t T_0_, T_i_, T_mult_;
  double eta_min_;
  double T_cur_;
};

}  // namespace ath::optim
