// ClassificationTask, LanguageModelTask and the optimizer/scheduler factory (see tasks.h).
#include "athanor/train/tasks.h"

#include "athanor/core/error.h"
#include "athanor/ops/comparison.h"
#include "athanor/ops/losses.h"
#include "athanor/ops/reduction.h"
#include "athanor/optim/adam.h"
#include "athanor/optim/cosine_lr.h"
#include "athanor/optim/one_cycle_lr.h"
#include "athanor/optim/sgd.h"
#include "athanor/tensor/grad_mode.h"
#include "athanor/train/trainer.h"

namespace ath::train {

OptimizerConfig make_optimizer(const std::vector<Tensor>& params, const OptimizerSpec& s,
                               const Trainer* trainer) {
  OptimizerConfig cfg;
  if (s.name == "sgd") {
    cfg.optimizer =
        std::make_shared<optim::SGD>(params, optim::SGDOptions{.lr = s.lr,
                                                               .momentum = s.momentum,
                                                               .weight_decay = s.weight_decay,
                                                               .nesterov = s.nesterov});
  } else if (s.name == "adam") {
    cfg.optimizer = std::make_shared<optim::Adam>(
        params, optim::AdamOptions{.lr = s.lr, .betas = s.betas, .weight_decay = s.weight_decay});
  } else if (s.name == "adamw") {
    cfg.optimizer = std::make_shared<optim::AdamW>(
        params, optim::AdamWOptions{.lr = s.lr, .betas = s.betas, .weight_decay = s.weight_decay});
  } else {
    ATH_CHECK(false, ValueError, "make_optimizer: unknown optimizer '{}' (sgd, adam, adamw)",
              s.name);
  }
  optim::Optimizer& opt = *cfg.optimizer;
  if (s.scheduler == "step") {
    cfg.lr_scheduler = LRSchedulerConfig(std::make_shared<optim::StepLR>(
        opt, optim::StepLROptions{.step_size = s.step_size, .gamma = s.gamma}));
  } else if (s.scheduler == "cosine") {
    const int64_t t_max = s.t_max.value_or(trainer != nullptr ? trainer->max_epochs() : -1);
    ATH_CHECK(t_max >= 1, ValueError,
              "make_optimizer: the cosine schedule needs t_max (or a trainer with max_epochs)");
    cfg.lr_scheduler = LRSchedulerConfig(std::make_shared<optim::CosineAnnealingLR>(
        opt, optim::CosineAnnealingLROptions{.T_max = t_max, .eta_min = s.eta_min}));
  } else if (s.scheduler == "onecycle") {
    const int64_t total = trainer != nullptr ? trainer->estimated_stepping_batches() : -1;
    ATH_CHECK(total >= 1, ValueError,
              "make_optimizer: the onecycle schedule needs a known number of steps (a "
              "dataloader with a length, or trainer.max_steps)");
    cfg.lr_scheduler =
        LRSchedulerConfig(std::make_shared<optim::OneCycleLR>(
                              opt, optim::OneCycleLROptions{.max_lr = s.max_lr.value_or(s.lr),
                                                            .total_steps = total,
                                                            .pct_start = s.pct_start}),
                          SchedulerOptions{.interval = SchedulerInterval::Step});
  } else {
    ATH_CHECK(s.scheduler == "none", ValueError,
              "make_optimizer: unknown scheduler '{}' (none, step, cosine, onecycle)", s.scheduler);
  }
  return cfg;
}

namespace {
nlohmann::json spec_json(const std::string& net, const OptimizerSpec& s) {
  return {{"net", net},
          {"optimizer", s.name},
          {"lr", s.lr},
          {"momentum", s.momentum},
          {"weight_decay", s.weight_decay},
          {"scheduler", s.scheduler}};
}
}  // namespace

NetworkTask::NetworkTask(std::string type_name, std::shared_ptr<nn::Module> net, OptimizerSpec spec)
    : TrainingModule(type_name), net_(std::move(net)), spec_(std::move(spec)) {
  ATH_CHECK(net_ != nullptr, ValueError, "{}: the network is null", type_name);
  register_module("net", net_);
  save_hyperparameters(spec_json(net_->type_name(), spec_));
}

OptimizerConfig NetworkTask::configure_optimizers() {
  return make_optimizer(parameters(), spec_, trainer());
}

ClassificationTask::ClassificationTask(std::shared_ptr<nn::Module> net, OptimizerSpec spec)
    : NetworkTask("ClassificationTask", std::move(net), std::move(spec)) {}

Tensor ClassificationTask::training_step(const data::Batch& batch, int64_t) {
  Tensor logits = forward(batch[0]);
  Tensor loss = cross_entropy(logits, batch[1]);
  log("train_loss", loss, {.prog_bar = true});
  {
    NoGradGuard no_grad;
    log("train_acc", eq(argmax(logits, 1), batch[1]).to(kFloat32).mean(),
        {.on_step = false, .on_epoch = true});
  }
  return loss;
}

void ClassificationTask::evaluate(const data::Batch& batch, const std::string& prefix) {
  Tensor logits = forward(batch[0]);
  log(prefix + "_loss", cross_entropy(logits, batch[1]), {.prog_bar = true});
  log(prefix + "_acc", eq(argmax(logits, 1), batch[1]).to(kFloat32).mean(), {.prog_bar = true});
}

std::vector<std::string> ClassificationTask::known_metrics() const {
  return {"train_loss", "train_acc", "val_loss", "val_acc"};
}

void ClassificationTask::validation_step(const data::Batch& b, int64_t) { evaluate(b, "val"); }
void ClassificationTask::test_step(const data::Batch& b, int64_t) { evaluate(b, "test"); }

LanguageModelTask::LanguageModelTask(std::shared_ptr<nn::Module> net, OptimizerSpec spec)
    : NetworkTask("LanguageModelTask", std::move(net), std::move(spec)) {}

Tensor LanguageModelTask::loss(const data::Batch& batch) {
  Tensor logits = forward(batch[0]);
  return cross_entropy(logits.reshape({-1, logits.size(-1)}), batch[1].reshape({-1}));
}

Tensor LanguageModelTask::training_step(const data::Batch& batch, int64_t) {
  Tensor l = loss(batch);
  log("train_loss", l, {.prog_bar = true});
  return l;
}
std::vector<std::string> LanguageModelTask::known_metrics() const {
  return {"train_loss", "val_loss"};
}

void LanguageModelTask::validation_step(const data::Batch& batch, int64_t) {
  log("val_loss", loss(batch), {.prog_bar = true});
}
void LanguageModelTask::test_step(const data::Batch& batch, int64_t) {
  log("test_loss", loss(batch), {.prog_bar = true});
}

}  // namespace ath::train
