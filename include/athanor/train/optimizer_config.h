// What TrainingModule::configure_optimizers returns: an optimizer and, optionally, an LR
// scheduler with Lightning's scheduler config (interval, frequency, monitor, strict, name).
//
//   #include "athanor/nn/linear.h"
//   #include "athanor/optim/adam.h"
//   #include "athanor/train/training_module.h"
//   struct Regressor : train::TrainingModule {
//     nn::Linear fc{{.in = 4, .out = 1}};
//     Regressor() { register_module("fc", fc); }
//     Tensor training_step(const data::Batch& b, int64_t) override {
//       return mse_loss(fc(b[0]), b[1]);
//     }
//     train::OptimizerConfig configure_optimizers() override {
//       auto opt = std::make_shared<optim::Adam>(parameters(), optim::AdamOptions{.lr = 1e-3});
//       auto sched = std::make_shared<optim::StepLR>(*opt, optim::StepLROptions{.step_size = 10});
//       return {opt, train::LRSchedulerConfig(sched)};           // stepped once per epoch
//     }
//   };
//   Regressor model;
//   train::OptimizerConfig config = model.configure_optimizers();
//   // ReduceLROnPlateau needs the metric it watches:
//   auto plateau = std::make_shared<optim::ReduceLROnPlateau>(*config.optimizer);
//   config.lr_scheduler = train::LRSchedulerConfig(plateau, {.monitor = "val_loss"});
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "athanor/optim/lr_scheduler.h"
#include "athanor/optim/optimizer.h"
#include "athanor/optim/reduce_lr_on_plateau.h"

namespace ath::train {

enum class SchedulerInterval { Epoch, Step };

struct SchedulerOptions {
  SchedulerInterval interval = SchedulerInterval::Epoch;
  int64_t frequency = 1;  // step every `frequency` epochs or optimizer steps
  std::string monitor;    // metric for ReduceLROnPlateau (required for it)
  bool strict = true;     // a missing monitored metric is an error (else a warning, no step)
  std::string name;       // LearningRateMonitor's key ("lr-Adam" when empty)
};

// One scheduler of either kind behind one interface: the Trainer steps it, checkpoints it and
// reads its learning rates without caring which it is.
class LRSchedulerConfig {
 public:
  explicit LRSchedulerConfig(std::shared_ptr<optim::LRScheduler> scheduler,
                             SchedulerOptions options = {});
  explicit LRSchedulerConfig(std::shared_ptr<optim::ReduceLROnPlateau> scheduler,
                             SchedulerOptions options = {});

  const SchedulerOptions& options() const { return options_; }
  bool needs_metric() const { return plateau_ != nullptr; }
  // Steps the scheduler; `metric` is the monitored value (only ReduceLROnPlateau reads it).
  void step(std::optional<double> metric = std::nullopt);
  std::vector<double> last_lr() const;
  std::string type_name() const;
  nlohmann::json state_dict() const;
  void load_state_dict(const nlohmann::json& state);

  optim::LRScheduler* scheduler() const { return scheduler_.get(); }
  optim::ReduceLROnPlateau* plateau() const { return plateau_.get(); }

 private:
  std::shared_ptr<optim::LRScheduler> scheduler_;
  std::shared_ptr<optim::ReduceLROnPlateau> plateau_;
  SchedulerOptions options_;
};

struct OptimizerConfig {
  std::shared_ptr<optim::Optimizer> optimizer;
  std::optional<LRSchedulerConfig> lr_scheduler;
};

}  // namespace ath::train
