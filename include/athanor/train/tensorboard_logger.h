// TensorBoardLogger: Lightning's TensorBoard logger, without TensorBoard or protobuf at run time.
// Writes save_dir/name/version_N/events.out.tfevents.<time>.<host>.<pid>.<n>, the event file
// `tensorboard --logdir save_dir` reads: TFRecord framing (io/tfrecord.h) around Event protos,
// one per log_metrics call, each with a Summary holding every metric as a scalar (simple_value,
// what torch.utils.tensorboard's add_scalar writes), and hparams.yaml beside it.
//
//   auto tb = std::make_shared<train::TensorBoardLogger>("runs");  // runs/lightning_logs/version_0
//   tb->log_metrics({{"train_loss", 0.41}, {"epoch", 0}}, 49);
//   tb->save();                                                     // flushed to the events file
//
// The Trainer's default loggers include one, in the CSVLogger's directory. Events are buffered and
// appended by save() (the Trainer calls it at epoch ends and checkpoints) and finalize(); a crash
// can lose at most the unsaved ones, and a torn last record is one TensorBoard skips.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "athanor/train/logger.h"

namespace ath::train {

struct TensorBoardLoggerOptions {
  std::string name = "lightning_logs";  // empty: versions directly under save_dir
  // Unset: one more than the highest existing save_dir/name/version_N (0 when there is none).
  std::optional<int64_t> version;
};

class TensorBoardLogger : public Logger {
 public:
  // Picks the version, creates log_dir() and the events file, and writes its first event (the
  // file version). An IOError names what could not be created.
  explicit TensorBoardLogger(std::string save_dir, TensorBoardLoggerOptions options = {});

  std::string name() const override { return options_.name; }
  std::string version() const override { return "version_" + std::to_string(version_); }
  std::string log_dir() const override { return log_dir_; }
  const std::string& events_file() const { return events_file_; }

  // Merged into the hyperparameters logged so far; hparams.yaml rewritten (as CSVLogger's).
  void log_hyperparams(const nlohmann::json& hparams) override;
  // One Event at `step` with every metric as a float32 scalar, in key order.
  void log_metrics(const Metrics& metrics, int64_t step) override;
  void save() override;

 private:
  void append(const std::string& bytes);

  std::string save_dir_;
  TensorBoardLoggerOptions options_;
  int64_t version_ = 0;
  std::string log_dir_, events_file_;
  nlohmann::json hparams_ = nlohmann::json::object();
  std::string pending_;  // framed records not yet appended
};

// The Event protos, encoded (public for tests and tools).
std::string encode_file_version_event(double wall_time);
std::string encode_scalars_event(double wall_time, int64_t step, const Metrics& metrics);

}  // namespace ath::train
