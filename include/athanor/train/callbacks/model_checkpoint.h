// ModelCheckpoint: Lightning's checkpoint callback — saves checkpoints during fit, keeps the
// best `save_top_k` by a monitored metric, optionally a `last.ckpt`.
//
//   #include "athanor/data/data.h"
//   #include "athanor/nn/linear.h"
//   #include "athanor/train/tasks.h"
//   #include "athanor/train/trainer.h"
//   auto net = std::make_shared<nn::Linear>(nn::LinearOptions{.in = 4, .out = 3});
//   train::ClassificationTask model(net, {.name = "sgd", .lr = 0.1});
//   auto dataset = std::make_shared<data::TensorDataset>(
//       data::TensorList{randn({64, 4}), randint(0, 3, {64})});
//   auto loader = data::make_loader(dataset, {.batch_size = 16});
//   auto ckpt = std::make_shared<train::ModelCheckpoint>(train::ModelCheckpointOptions{
//       .dirpath = "runs/ckpts", .filename = "{epoch}-{val_loss:.2f}", .monitor = "val_loss",
//       .save_top_k = 3, .save_last = true});
//   train::Trainer trainer({.max_epochs = 1, .callbacks = {ckpt}});
//   trainer.fit(model, loader, loader);
//   ckpt->best_model_path();    // "runs/ckpts/epoch=0-val_loss=1.03.ckpt"
//
// Filenames: `{name}` or `{name:fmt}` (fmt's format spec) is replaced by `name=value` (just the
// value with auto_insert_metric_name=false); `epoch` and `step` are always available, other
// names come from the logged metrics. Without `monitor`, save_top_k = 1 keeps the latest.
// Saving happens at the end of a training epoch (every_n_epochs), every_n_train_steps, or every
// train_time_interval_s, and after a validation run in the middle of an epoch.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "athanor/train/callback.h"
#include "athanor/train/logger.h"

namespace ath::train {

struct ModelCheckpointOptions {
  std::string dirpath;       // default: <trainer log_dir>/checkpoints
  std::string filename;      // default: "{epoch}-{step}"
  std::string monitor;       // metric to rank checkpoints by; empty: the latest is the best
  std::string mode = "min";  // "min" or "max"
  int64_t save_top_k = 1;    // -1: keep all; 0: none (only last.ckpt if save_last)
  bool save_last = false;    // also write last.ckpt (a copy of the latest)
  bool save_weights_only = false;
  int64_t every_n_epochs = 1;  // 0: never at epoch ends
  int64_t every_n_train_steps = 0;
  std::optional<double> train_time_interval_s;
  bool auto_insert_metric_name = true;
  bool verbose = false;
};

class ModelCheckpoint : public Callback {
 public:
  explicit ModelCheckpoint(ModelCheckpointOptions options = {});

  std::string state_key() const override;
  nlohmann::json state_dict() const override;
  void load_state_dict(const nlohmann::json& state) override;
  bool is_monitoring() const override { return true; }
  std::string monitor() const override { return options_.monitor; }

  void setup(Trainer& trainer, TrainingModule& module, const std::string& stage) override;
  void on_train_batch_end(Trainer& trainer, TrainingModule& module, const Tensor& loss,
                          const data::Batch& batch, int64_t batch_idx) override;
  void on_validation_end(Trainer& trainer, TrainingModule& module) override;
  void on_train_epoch_end(Trainer& trainer, TrainingModule& module) override;

  const std::string& best_model_path() const { return best_path_; }
  std::optional<double> best_model_score() const { return best_score_; }
  const std::string& last_model_path() const { return last_path_; }
  const std::map<std::string, double>& best_k_models() const { return best_k_; }
  const std::string& dirpath() const { return dirpath_; }
  // For ckpt_path="last": the newest checkpoint (last.ckpt first) in dirpath or, when dirpath is
  // the default <log_dir>/checkpoints and holds none, in the checkpoints/ of the earlier
  // version_N directories beside log_dir, newest version first — a new run's own version
  // directory is still empty. "" if none; `searched` (if given) gets the directories looked in.
  std::string find_last_checkpoint(const Trainer& trainer,
                                   std::vector<std::string>* searched = nullptr) const;
  // The file name (without directory and extension) the template gives for these values.
  std::string format_filename(int64_t epoch, int64_t step, const Metrics& metrics) const;

 private:
  void save(Trainer& trainer);
  bool better(double a, double b) const;

  ModelCheckpointOptions options_;
  std::string dirpath_;
  std::map<std::string, double> best_k_;  // path -> score
  std::string best_path_;
  std::optional<double> best_score_;
  std::string last_path_;
  std::string latest_path_;  // the newest top-k file (no monitor: the one to replace)
  int64_t last_saved_step_ = -1;
  double last_time_save_s_ = 0.0;
};

}  // namespace ath::train
