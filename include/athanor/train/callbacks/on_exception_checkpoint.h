// OnExceptionCheckpoint: Lightning's callback — when fit fails (an exception escapes it, an
// interrupt turned into one included), saves a full checkpoint to `<dirpath>/<filename>.ckpt`
// before the error propagates, so the run can be inspected or resumed from where it broke.
//
//   #include "athanor/data/data.h"
//   #include "athanor/nn/linear.h"
//   #include "athanor/train/callbacks/lambda_callback.h"
//   #include "athanor/train/tasks.h"
//   #include "athanor/train/trainer.h"
//   auto net = std::make_shared<nn::Linear>(nn::LinearOptions{.in = 4, .out = 3});
//   train::ClassificationTask model(net, {.name = "sgd", .lr = 0.1});
//   auto dataset = std::make_shared<data::TensorDataset>(
//       data::TensorList{randn({64, 4}), randint(0, 3, {64})});
//   auto train_loader = data::make_loader(dataset, {.batch_size = 8});
//   auto crash = std::make_shared<train::LambdaCallback>(train::LambdaHooks{
//       .on_train_batch_start = [](train::Trainer&, train::TrainingModule&, const data::Batch&,
//                                  int64_t i) { if (i == 3) throw std::runtime_error("crash"); }});
//   auto on_crash = std::make_shared<train::OnExceptionCheckpoint>("runs/ckpt");
//   train::Trainer trainer({.max_epochs = 1, .callbacks = {on_crash, crash}});
//   try {
//     trainer.fit(model, train_loader);   // throws; runs/ckpt/on_exception.ckpt now exists
//   } catch (const std::runtime_error&) {
//   }
//   train::Trainer again({.max_epochs = 1});
//   again.fit(model, train_loader, {}, "runs/ckpt/on_exception.ckpt");   // resume at batch 3
//   assert(again.global_step() == 8);   // 3 steps before the crash, 5 after the resume
//
// The checkpoint records the step reached: optimizer steps that completed are in it, the
// failing batch's partial work is not.
#pragma once

#include <string>

#include "athanor/train/callback.h"

namespace ath::train {

class OnExceptionCheckpoint : public Callback {
 public:
  explicit OnExceptionCheckpoint(std::string dirpath, std::string filename = "on_exception");

  std::string state_key() const override;
  void on_exception(Trainer& trainer, TrainingModule& module, const std::exception& e) override;

  // `<dirpath>/<filename>.ckpt`.
  const std::string& ckpt_path() const { return ckpt_path_; }

 private:
  std::string dirpath_;
  std::string filename_;
  std::string ckpt_path_;
};

}  // namespace ath::train
