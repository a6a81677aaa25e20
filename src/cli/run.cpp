#include "athanor/cli/run.h"

#include <fmt/format.h>

#include "athanor/cli/schema.h"
#include "athanor/models/char_lstm.h"
#include "athanor/models/char_transformer.h"
#include "athanor/models/fashion.h"
#include "athanor/models/resnet.h"
#include "athanor/optim/adam.h"
#include "athanor/optim/cosine_lr.h"
#include "athanor/optim/one_cycle_lr.h"
#include "athanor/optim/sgd.h"

namespace ath::cli {

using nlohmann::json;

std::shared_ptr<nn::Module> build_model(const json& m) {
  const std::string name = m.at("name").get<std::string>();
  if (name == "fashion_mlp") return models::fashion_mlp();
  if (name == "fashion_cnn") return models::fashion_cnn();
  if (name == "char_lstm") return std::make_shared<models::CharLstm>();
  if (name == "char_transformer") return std::make_shared<models::CharTransformer>();
  if (name == "resnet") {
    const json& r = m.at("resnet");
    models::ResNetOptions o;
    const auto layers = r.at("layers").get<std::vector<int64_t>>();
    ATH_CHECK(layers.size() == 4, cli::ConfigError,
              "model.resnet.layers: expected 4 stages, got {}", layers.size());
    std::copy(layers.begin(), layers.end(), o.layers.begin());
    o.width = r.at("width").get<int64_t>();
    o.small_input = r.at("small_input").get<bool>();
    o.in_channels = r.at("in_channels").get<int64_t>();
    o.num_classes = r.at("num_classes").get<int64_t>();
    return std::make_shared<models::ResNet>(o);
  }
  ATH_THROW(cli::ConfigError, "model.name: unknown model '{}'", name);
}

std::unique_ptr<optim::Optimizer> build_optimizer(const json& m,
                                                  const std::vector<Tensor>& params) {
  const std::string name = m.at("optimizer").get<std::string>();
  const double lr = m.at("lr").get<double>();
  const double wd = m.at("weight_decay").get<double>();
  const auto betas = m.at("betas").get<std::vector<double>>();
  ATH_CHECK(betas.size() == 2, cli::ConfigError, "model.betas: expected 2 numbers, got {}",
            betas.size());
  if (name == "sgd") {
    return std::make_unique<optim::SGD>(
        params, optim::SGDOptions{.lr = lr,
                                  .momentum = m.at("momentum").get<double>(),
                                  .weight_decay = wd,
                                  .nesterov = m.at("nesterov").get<bool>()});
  }
  if (name == "adam") {
    return std::make_unique<optim::Adam>(
        params, optim::AdamOptions{.lr = lr, .betas = {betas[0], betas[1]}, .weight_decay = wd});
  }
  if (name == "adamw") {
    return std::make_unique<optim::AdamW>(
        params, optim::AdamWOptions{.lr = lr, .betas = {betas[0], betas[1]}, .weight_decay = wd});
  }
  ATH_THROW(cli::ConfigError, "model.optimizer: unknown optimizer '{}'", name);
}

SchedulerChoice build_scheduler(const json& config, optim::Optimizer& opt,
                                int64_t steps_per_epoch) {
  const json& m = config.at("model");
  const json& t = config.at("trainer");
  const std::string name = m.at("scheduler").get<std::string>();
  // Lightning: max_epochs null means 1000 when max_steps is not set.
  const int64_t max_epochs =
      t.at("max_epochs").is_null() ? 1000 : t.at("max_epochs").get<int64_t>();
  SchedulerChoice out;
  if (name == "none") return out;
  if (name == "step") {
    out.scheduler = std::make_unique<optim::StepLR>(
        opt, optim::StepLROptions{.step_size = m.at("step_size").get<int64_t>(),
                                  .gamma = m.at("gamma").get<double>()});
  } else if (name == "cosine") {
    const int64_t t_max = m.at("t_max").is_null() ? max_epochs : m.at("t_max").get<int64_t>();
    ATH_CHECK(t_max >= 1, cli::ConfigError,
              "model.scheduler cosine needs model.t_max or a positive trainer.max_epochs");
    out.scheduler = std::make_unique<optim::CosineAnnealingLR>(
        opt,
        optim::CosineAnnealingLROptions{.T_max = t_max, .eta_min = m.at("eta_min").get<double>()});
  } else if (name == "onecycle") {
    const int64_t max_steps = t.at("max_steps").get<int64_t>();
    const int64_t total = max_steps > 0 ? max_steps : max_epochs * steps_per_epoch;
    ATH_CHECK(total >= 1, cli::ConfigError,
              "model.scheduler onecycle needs trainer.max_steps or max_epochs and batches");
    const double max_lr =
        m.at("max_lr").is_null() ? m.at("lr").get<double>() : m.at("max_lr").get<double>();
    out.scheduler = std::make_unique<optim::OneCycleLR>(
        opt,
        optim::OneCycleLROptions{
            .max_lr = max_lr, .total_steps = total, .pct_start = m.at("pct_start").get<double>()});
    out.interval = "step";
  } else {
    ATH_THROW(cli::ConfigError, "model.scheduler: unknown scheduler '{}'", name);
  }
  return out;
}

int run_command(const std::string& subcommand, const json& config) {
  ATH_CHECK(subcommand == "fit" || subcommand == "validate" || subcommand == "test" ||
                subcommand == "predict",
            ValueError, "run_command: unknown subcommand '{}'", subcommand);
  const std::string data = config.at("data").at("name").get<std::string>();
  const std::string model_name = config.at("model").at("name").get<std::string>();
  const bool text_model = model_name == "char_lstm" || model_name == "char_transformer";
  ATH_CHECK(text_model == (data == "text"), cli::ConfigError,
            "model.name '{}' does not fit data.name '{}' (char models read text, the others "
            "images or tables)",
            model_name, data);
  std::shared_ptr<nn::Module> model = build_model(config.at("model"));
  auto optimizer = build_optimizer(config.at("model"), model->parameters());
  (void)optimizer;
  // TODO(trainer): build the data module from config["data"], the Trainer from
  // config["trainer"] (callbacks from trainer.callbacks), seed with seed_everything, and call
  // trainer.<subcommand>(model, data, ckpt_path).
  ATH_THROW(NotImplementedError, "run_command: Trainer wiring lands with the Trainer");
}

}  // namespace ath::cli
