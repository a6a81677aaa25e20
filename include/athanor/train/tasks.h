// Ready-made training modules for the common tasks, used by the `athanor` command line for its
// built-in models, and by anyone who wants a classifier or a language model trained without
// writing a module:
//
//   #include "athanor/data/data.h"
//   #include "athanor/models/fashion.h"
//   #include "athanor/train/trainer.h"
//   auto images = std::make_shared<data::TensorDataset>(
//       data::TensorList{randn({16, 1, 28, 28}), randint(0, 10, {16})});   // 16 fake images
//   auto train_loader = data::make_loader(images, {.batch_size = 8});
//   auto val_loader = train_loader, test_loader = train_loader;
//   train::Trainer trainer({.max_epochs = 1});
//
//   train::ClassificationTask task(models::fashion_cnn(), {.name = "adam", .lr = 1e-3});
//   trainer.fit(task, train_loader, val_loader);   // logs train_loss/acc, val_loss/acc
//   trainer.test(task, test_loader);               // test_loss, test_acc
//
// Batches are TensorList{inputs, targets}. ClassificationTask: logits [N, C] vs class indices
// [N]. LanguageModelTask: logits [N, T, V] vs next tokens [N, T] (loss in nats per token).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "athanor/nn/module.h"
#include "athanor/train/training_module.h"

namespace ath::train {

// An optimizer and LR schedule by name, with the `athanor` config's keys.
struct OptimizerSpec {
  std::string name = "adam";  // sgd | adam | adamw
  double lr = 1e-3;
  double momentum = 0.0;  // sgd
  bool nesterov = false;  // sgd
  std::pair<double, double> betas = {0.9, 0.999};
  double weight_decay = 0.0;
  std::string scheduler = "none";  // none | step | cosine | onecycle
  int64_t step_size = 1;           // step: epochs between decays
  double gamma = 0.7;              // step: decay factor
  std::optional<int64_t> t_max;    // cosine: epochs (default: the trainer's max_epochs)
  double eta_min = 0.0;            // cosine
  std::optional<double> max_lr;    // onecycle: peak (default: lr); stepped per optimizer step
  double pct_start = 0.3;          // onecycle
};

// Builds the optimizer (and scheduler) for `params`; `trainer` sizes cosine/onecycle schedules.
OptimizerConfig make_optimizer(const std::vector<Tensor>& params, const OptimizerSpec& spec,
                               const Trainer* trainer);

// What both tasks share: a wrapped network (registered as "net"), its forward, and the
// optimizer the spec names.
class NetworkTask : public TrainingModule {
 public:
  Tensor forward(const Tensor& x) override { return (*net_)(x); }
  OptimizerConfig configure_optimizers() override;
  nn::Module& net() { return *net_; }

 protected:
  NetworkTask(std::string type_name, std::shared_ptr<nn::Module> net, OptimizerSpec spec);

 private:
  std::shared_ptr<nn::Module> net_;
  OptimizerSpec spec_;
};

class ClassificationTask : public NetworkTask {
 public:
  ClassificationTask(std::shared_ptr<nn::Module> net, OptimizerSpec spec);
  Tensor training_step(const data::Batch& batch, int64_t batch_idx) override;
  void validation_step(const data::Batch& batch, int64_t batch_idx) override;
  void test_step(const data::Batch& batch, int64_t batch_idx) override;
  std::vector<std::string> known_metrics() const override;

 private:
  void evaluate(const data::Batch& batch, const std::string& prefix);
};

class LanguageModelTask : public NetworkTask {
 public:
  LanguageModelTask(std::shared_ptr<nn::Module> net, OptimizerSpec spec);
  Tensor training_step(const data::Batch& batch, int64_t batch_idx) override;
  void validation_step(const data::Batch& batch, int64_t batch_idx) override;
  void test_step(const data::Batch& batch, int64_t batch_idx) override;
  std::vector<std::string> known_metrics() const override;

 private:
  Tensor loss(const data::Batch& batch);
};

}  // namespace ath::train
