// Evaluation loops: validation (also the sanity check and validate()), test and predict, with
// Lightning's hooks. The module runs in eval mode without recording gradients; its training
// mode is restored afterwards.
#include <iostream>

#include "athanor/core/error.h"
#include "athanor/tensor/grad_mode.h"
#include "athanor/train/trainer.h"
#include "compiled_train_step.h"
#include "results_table.h"
#include "trainer_hooks.h"

namespace ath::train {

namespace {
struct EvalModeGuard {
  explicit EvalModeGuard(nn::Module& m) : module(m), was_training(m.is_training()) { m.eval(); }
  ~EvalModeGuard() { module.train(was_training); }
  nn::Module& module;
  bool was_training;
};
}  // namespace

Metrics Trainer::run_evaluation(Stage stage, Source source, int64_t limit) {
  const Stage previous = stage_;
  stage_ = stage;
  // The compiled training step's arena is not needed while evaluating; the next training step
  // allocates it again.
  if (compiled_step_) compiled_step_->release_memory();
  EvalModeGuard eval_mode(*module_);
  NoGradGuard no_grad;
  const bool testing = stage == Stage::Testing;
  const LogScope scope = testing ? LogScope::Test : LogScope::Validation;
  metrics_.reset(scope);
  if (testing) {
    ATH_TRAINER_HOOK(on_test_start);
    ATH_TRAINER_HOOK(on_test_epoch_start);
  } else {
    ATH_TRAINER_HOOK(on_validation_start);
    ATH_TRAINER_HOOK(on_validation_epoch_start);
  }
  source->start_epoch(0);
  for (int64_t i = 0; limit < 0 || i < limit; ++i) {
    std::optional<data::Batch> batch = source->next();
    if (!batch) break;
    current_batch_size_ = batch->size();
    log_scope_ = scope;
    // The step sees the batch as the precision plugin converts it (bf16-true), inside its
    // scope (autocast); the hooks see the batch as loaded.
    std::optional<data::Batch> converted = precision_->convert_input(*batch);
    const data::Batch& input = converted ? *converted : *batch;
    if (testing) {
      ATH_TRAINER_HOOK(on_test_batch_start, *batch, i);
      run_module_step("test_step", i, source.get(),
                      [&] { precision_->eval_step([&] { module_->test_step(input, i); }); });
      ATH_TRAINER_HOOK(on_test_batch_end, *batch, i);
    } else {
      ATH_TRAINER_HOOK(on_validation_batch_start, *batch, i);
      run_module_step("validation_step", i, source.get(),
                      [&] { precision_->eval_step([&] { module_->validation_step(input, i); }); });
      ATH_TRAINER_HOOK(on_validation_batch_end, *batch, i);
    }
  }
  log_scope_ = scope;
  if (testing) {
    ATH_TRAINER_HOOK(on_test_epoch_end);
  } else {
    ATH_TRAINER_HOOK(on_validation_epoch_end);
  }
  log_scope_ = LogScope::Other;
  Metrics logged = metrics_.end_epoch(scope);
  if (stage != Stage::SanityChecking && !logged.empty()) {
    Metrics with_epoch = logged;
    with_epoch["epoch"] = static_cast<double>(epoch_);
    log_to_loggers(with_epoch);
  }
  if (testing) {
    ATH_TRAINER_HOOK(on_test_end);
  } else {
    ATH_TRAINER_HOOK(on_validation_end);
  }
  stage_ = previous;
  return logged;
}

std::vector<Metrics> Trainer::evaluate_impl(TrainingModule& module, Stage stage, Source source,
                                            const std::string& ckpt_path, DataModule* data) {
  const bool testing = stage == Stage::Testing;
  const char* name = testing ? "test" : "validate";
  ATH_CHECK(source != nullptr, ValueError, "Trainer::{}: no dataloader was given", name);
  setup_run(module, stage);
  datamodule_ = data;
  std::vector<Metrics> out;
  try {
    ATH_TRAINER_HOOK(setup, std::string(name));
    if (!ckpt_path.empty()) restore(ckpt_path, /*full=*/false);
    const int64_t limit =
        resolve_limit(testing ? options_.limit_test_batches : options_.limit_val_batches,
                      source->num_batches(), testing ? "limit_test_batches" : "limit_val_batches");
    (testing ? num_test_batches_ : num_val_batches_) = limit;  // the progress bar's total
    // Lightning returns the epoch-level metrics the run logged, and prints them in a box.
    out.push_back(run_evaluation(stage, source, limit));
    if (options_.enable_progress_bar && !out.back().empty()) {
      std::cout << detail::results_table(out.back(), testing ? "test" : "validate",
                                         detail::terminal_columns())
                << std::flush;
    }
  } catch (...) {
    teardown_run(name, "failed");
    throw;
  }
  teardown_run(name, "success");
  return out;
}

std::vector<Metrics> Trainer::validate(TrainingModule& module, Source val,
                                       const std::string& ckpt_path) {
  return evaluate_impl(module, Stage::Validating, std::move(val), ckpt_path, nullptr);
}

std::vector<Metrics> Trainer::validate(TrainingModule& module, DataModule& data,
                                       const std::string& ckpt_path) {
  data.prepare_data();
  data.setup("validate");
  return evaluate_impl(module, Stage::Validating, data.val_dataloader(), ckpt_path, &data);
}

std::vector<Metrics> Trainer::test(TrainingModule& module, Source test,
                                   const std::string& ckpt_path) {
  return evaluate_impl(module, Stage::Testing, std::move(test), ckpt_path, nullptr);
}

std::vector<Metrics> Trainer::test(TrainingModule& module, DataModule& data,
                                   const std::string& ckpt_path) {
  data.prepare_data();
  data.setup("test");
  return evaluate_impl(module, Stage::Testing, data.test_dataloader(), ckpt_path, &data);
}

std::vector<Tensor> Trainer::predict(TrainingModule& module, Source source,
                                     const std::string& ckpt_path) {
  ATH_CHECK(source != nullptr, ValueError, "Trainer::predict: no dataloader was given");
  setup_run(module, Stage::Predicting);
  std::vector<Tensor> outputs;
  try {
    ATH_TRAINER_HOOK(setup, std::string("predict"));
    if (!ckpt_path.empty()) restore(ckpt_path, /*full=*/false);
    const int64_t limit = resolve_limit(options_.limit_predict_batches, source->num_batches(),
                                        "limit_predict_batches");
    num_predict_batches_ = limit;
    EvalModeGuard eval_mode(module);
    NoGradGuard no_grad;
    ATH_TRAINER_HOOK(on_predict_start);
    ATH_TRAINER_HOOK(on_predict_epoch_start);
    source->start_epoch(0);
    for (int64_t i = 0; limit < 0 || i < limit; ++i) {
      std::optional<data::Batch> batch = source->next();
      if (!batch) break;
      ATH_TRAINER_HOOK(on_predict_batch_start, *batch, i);
      std::optional<data::Batch> converted = precision_->convert_input(*batch);
      const data::Batch& input = converted ? *converted : *batch;
      Tensor y = run_module_step("predict_step", i, source.get(), [&] {
        Tensor out;
        precision_->eval_step([&] { out = module.predict_step(input, i); });
        return out;
      });
      ATH_TRAINER_HOOK(on_predict_batch_end, y, *batch, i);
      outputs.push_back(std::move(y));
    }
    ATH_TRAINER_HOOK(on_predict_epoch_end);
    ATH_TRAINER_HOOK(on_predict_end);
  } catch (...) {
    teardown_run("predict", "failed");
    throw;
  }
  teardown_run("predict", "success");
  return outputs;
}

}  // namespace ath::train
