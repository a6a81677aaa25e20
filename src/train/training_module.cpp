// TrainingModule: logging, hyperparameters and manual optimization, forwarded to the Trainer.
#include "athanor/train/training_module.h"

#include "athanor/autograd/engine.h"
#include "athanor/core/error.h"
#include "athanor/optim/clip_grad.h"
#include "athanor/train/trainer.h"

namespace ath::train {

TrainingModule::TrainingModule(std::string type_name) : nn::Module(std::move(type_name)) {}

Tensor TrainingModule::predict_step(const data::Batch& batch, int64_t /*batch_idx*/) {
  if (batch.holds<data::TensorList>()) return forward(batch[0]);
  return forward(batch.as<Tensor>());
}

void TrainingModule::log(const std::string& name, double value, const LogOptions& options) {
  // Outside a Trainer run there is nowhere to log to; Lightning warns and ignores it too.
  if (trainer_ != nullptr) trainer_->log_from_module(name, value, options);
}

void TrainingModule::log(const std::string& name, const Tensor& value, const LogOptions& options) {
  ATH_CHECK(value.defined() && value.numel() == 1, ShapeError,
            "log('{}'): expected a one-element tensor, got {}", name,
            value.defined() ? fmt::format("shape {}", value.shape()) : std::string("undefined"));
  if (trainer_ != nullptr) trainer_->log_tensor_from_module(name, value, options);
}

void TrainingModule::log_dict(const Metrics& values, const LogOptions& options) {
  for (const auto& [k, v] : values) log(k, v, options);
}

void TrainingModule::save_hyperparameters(nlohmann::json hparams) {
  ATH_CHECK(hparams.is_object(), ValueError,
            "save_hyperparameters: expected a JSON object of name -> value, got {}",
            hparams.type_name());
  hparams_ = std::move(hparams);
}

optim::Optimizer& TrainingModule::optimizer() {
  ATH_CHECK(trainer_ != nullptr && trainer_->optimizer() != nullptr, ValueError,
            "{}::optimizer(): only available during fit, after configure_optimizers", type_name());
  return *trainer_->optimizer();
}

void TrainingModule::manual_backward(const Tensor& loss) {
  ATH_CHECK(loss.defined() && loss.numel() == 1, ShapeError,
            "manual_backward: expected a one-element loss");
  backward({loss});
  // Outside fit (a module used on its own) there is no strategy to synchronise through.
  if (trainer_ != nullptr && trainer_->optimizer() != nullptr)
    trainer_->strategy().reduce_gradients(*trainer_->optimizer());
}

void TrainingModule::manual_step() {
  optim::Optimizer& opt = optimizer();
  Strategy& strategy = trainer_->strategy();
  strategy.before_optimizer_step(opt);
  opt.step();
  strategy.after_optimizer_step(opt);
}

void TrainingModule::clip_gradients(optim::Optimizer& opt, std::optional<double> clip_val,
                                    const std::string& algorithm) {
  if (!clip_val || *clip_val <= 0.0) return;
  std::vector<Tensor> params;
  for (std::size_t g = 0; g < opt.num_param_groups(); ++g) {
    for (const auto& p : opt.params(g)) params.push_back(p);
  }
  if (algorithm == "value") {
    optim::clip_grad_value_(params, *clip_val);
  } else {
    ATH_CHECK(algorithm == "norm", ValueError,
              "clip_gradients: algorithm must be 'norm' or 'value', got '{}'", algorithm);
    optim::clip_grad_norm_(params, *clip_val);
  }
}

void TrainingModule::configure_gradient_clipping(optim::Optimizer& opt,
                                                 std::optional<double> clip_val,
                                                 const std::string& algorithm) {
  clip_gradients(opt, clip_val, algorithm);
}

int64_t TrainingModule::current_epoch() const {
  return trainer_ != nullptr ? trainer_->current_epoch() : 0;
}
int64_t TrainingModule::global_step() const {
  return trainer_ != nullptr ? trainer_->global_step() : 0;
}

}  // namespace ath::train
