// Timer: Lightning's Timer callback — tracks the time spent in each stage and stops fit when a
// time budget is used up (checked after every training batch, or every epoch).
//
//   #include "athanor/data/data.h"
//   #include "athanor/nn/linear.h"
//   #include "athanor/train/tasks.h"
//   #include "athanor/train/trainer.h"
//   auto net = std::make_shared<nn::Linear>(nn::LinearOptions{.in = 4, .out = 3});
//   train::ClassificationTask model(net, {.name = "sgd", .lr = 0.1});
//   auto dataset = std::make_shared<data::TensorDataset>(
//       data::TensorList{randn({64, 4}), randint(0, 3, {64})});
//   auto train_loader = data::make_loader(dataset, {.batch_size = 8});
//   auto timer = std::make_shared<train::Timer>(train::TimerOptions{.duration = "00:12:00:00"});
//   train::Trainer trainer({.max_epochs = 1, .callbacks = {timer}});  // stops after 12 hours
//   trainer.fit(model, train_loader);
//   timer->time_elapsed("train");   // seconds; also time_elapsed("validate"), "test", "predict"
//
// `duration` is seconds (a double) or "DD:HH:MM:SS"; without one the Timer only measures. The
// elapsed training time is saved in checkpoints, so a resumed run continues the same budget.
// A stop requested from on_fit_start (a restored budget already spent) takes effect after the
// first batch, where Lightning runs none: athanor's loop checks the stop flag after each batch.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <variant>

#include "athanor/train/callback.h"

namespace ath::train {

struct TimerOptions {
  std::variant<std::monostate, double, std::string> duration;  // none: measure only
  std::string interval = "step";                               // "step" or "epoch"
  bool verbose = true;  // prints when the time limit stops training
};

class Timer : public Callback {
 public:
  explicit Timer(TimerOptions options = {});

  // "DD:HH:MM:SS" -> seconds (ValueError when malformed).
  static double parse_duration(const std::string& text);

  std::string state_key() const override { return "Timer"; }
  nlohmann::json state_dict() const override;
  void load_state_dict(const nlohmann::json& state) override;

  // Seconds since the stage started (its whole run when it ended); for "train" plus the time
  // restored from a checkpoint. Stages: "train", "validate", "test", "predict".
  double time_elapsed(const std::string& stage = "train") const;
  // Budget left for `stage` (nullopt without a duration).
  std::optional<double> time_remaining(const std::string& stage = "train") const;
  // steady_clock times of the stage's last start / end (nullopt if not started / not ended).
  std::optional<std::chrono::steady_clock::time_point> start_time(
      const std::string& stage = "train") const;
  std::optional<std::chrono::steady_clock::time_point> end_time(
      const std::string& stage = "train") const;
  std::optional<double> duration_s() const { return duration_; }

  void on_fit_start(Trainer& t, TrainingModule& m) override;
  void on_train_start(Trainer&, TrainingModule&) override { start("train"); }
  void on_train_end(Trainer&, TrainingModule&) override { end("train"); }
  void on_validation_start(Trainer&, TrainingModule&) override { start("validate"); }
  void on_validation_end(Trainer&, TrainingModule&) override { end("validate"); }
  void on_test_start(Trainer&, TrainingModule&) override { start("test"); }
  void on_test_end(Trainer&, TrainingModule&) override { end("test"); }
  void on_predict_start(Trainer&, TrainingModule&) override { start("predict"); }
  void on_predict_end(Trainer&, TrainingModule&) override { end("predict"); }
  void on_train_batch_end(Trainer& t, TrainingModule& m, const Tensor& loss, const data::Batch& b,
                          int64_t batch_idx) override;
  void on_train_epoch_end(Trainer& t, TrainingModule& m) override;

 private:
  using Clock = std::chrono::steady_clock;
  void start(const std::string& stage);
  void end(const std::string& stage);
  void check_time_remaining(Trainer& trainer);
  void check_stage(const std::string& stage) const;

  TimerOptions options_;
  std::optional<double> duration_;
  std::map<std::string, Clock::time_point> start_;
  std::map<std::string, Clock::time_point> end_;
  double offset_ = 0.0;  // training time restored from a checkpoint
};

}  // namespace ath::train
