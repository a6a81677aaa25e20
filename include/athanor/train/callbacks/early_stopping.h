// EarlyStopping: Lightning's callback — stops fit when a monitored metric stops improving.
//
//   auto stop = std::make_shared<train::EarlyStopping>(train::EarlyStoppingOptions{
//       .monitor = "val_loss", .min_delta = 1e-3, .patience = 3});
//
// Patience counts validation checks (end-of-epoch ones by default) without an improvement of
// at least min_delta. check_finite stops at once on NaN/Inf; stopping_threshold stops when the
// metric is good enough, divergence_threshold when it is hopeless. The reason is in
// stopping_reason() and printed when verbose.
#pragma once

#include <optional>
#include <string>

#include "athanor/train/callback.h"

namespace ath::train {

struct EarlyStoppingOptions {
  std::string monitor;  // required
  double min_delta = 0.0;
  int64_t patience = 3;
  std::string mode = "min";  // "min" or "max"
  bool strict = true;        // error if the metric was never logged
  bool check_finite = true;
  std::optional<double> stopping_threshold;
  std::optional<double> divergence_threshold;
  bool check_on_train_epoch_end = true;  // else after each validation run
  bool verbose = false;
};

class EarlyStopping : public Callback {
 public:
  explicit EarlyStopping(EarlyStoppingOptions options);

  std::string state_key() const override;
  nlohmann::json state_dict() const override;
  void load_state_dict(const nlohmann::json& state) override;
  bool is_monitoring() const override { return true; }
  std::string monitor() const override { return options_.monitor; }

  void on_train_epoch_end(Trainer& trainer, TrainingModule& module) override;
  void on_validation_end(Trainer& trainer, TrainingModule& module) override;

  int64_t wait_count() const { return wait_; }
  std::optional<double> best_score() const { return best_; }
  int64_t stopped_epoch() const { return stopped_epoch_; }
  const std::string& stopping_reason() const { return reason_; }

 private:
  void check(Trainer& trainer);
  bool improved(double current) const;

  EarlyStoppingOptions options_;
  int64_t wait_ = 0;
  std::optional<double> best_;
  int64_t stopped_epoch_ = 0;
  std::string reason_;
};

}  // namespace ath::train
