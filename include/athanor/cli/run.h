// What the athanor command does once its config resolved: build the model, optimizer,
// scheduler and data the config names, and hand them to the Trainer for fit / validate / test
// / predict. The builders are public so the Trainer wiring (and tests) can reuse them.
//
//   nlohmann::json cfg = cli::resolve_config(cli::athanor_schema(), cli::default_config_yaml(),
//                                            {}, {});
//   auto model = cli::build_model(cfg["model"]);                    // W2's CNN
//   auto opt = cli::build_optimizer(cfg["model"], model->parameters());
//   int status = cli::run_command("fit", cfg);
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "athanor/nn/module.h"
#include "athanor/optim/lr_scheduler.h"
#include "athanor/optim/optimizer.h"

namespace ath::cli {

// config["model"] -> the model it names (fashion_mlp, fashion_cnn, char_lstm,
// char_transformer, resnet with model.resnet.*). ValueError for an unknown name.
std::shared_ptr<nn::Module> build_model(const nlohmann::json& model_config);

// config["model"] -> SGD(lr, momentum, nesterov, weight_decay), Adam or AdamW(lr, betas,
// weight_decay).
std::unique_ptr<optim::Optimizer> build_optimizer(const nlohmann::json& model_config,
                                                  const std::vector<Tensor>& params);

// The schedule config["model"]["scheduler"] names, and when it steps (Lightning's "interval"):
// step -> StepLR per epoch; cosine -> CosineAnnealingLR per epoch (T_max: model.t_max, else
// trainer.max_epochs); onecycle -> OneCycleLR per step over max_steps (when > 0) or
// max_epochs * steps_per_epoch; none -> a null scheduler.
struct SchedulerChoice {
  std::unique_ptr<optim::LRScheduler> scheduler;  // null for "none"
  std::string interval = "epoch";                 // "epoch" or "step"
};
SchedulerChoice build_scheduler(const nlohmann::json& config, optim::Optimizer& optimizer,
                                int64_t steps_per_epoch);

// Runs "fit", "validate", "test" or "predict" with a resolved config (the shape of
// athanor_schema(); see docs/cli.md). Returns the process exit status. Throws ConfigError
// (exit 2) for a config that cannot work (resnet with a text dataset), other ath::Error (exit 1)
// for failures while running.
int run_command(const std::string& subcommand, const nlohmann::json& config);

}  // namespace ath::cli
