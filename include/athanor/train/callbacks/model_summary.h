// ModelSummary: prints Lightning's model summary table when fit starts (and hands it to the
// loggers, so the HTML report shows it). Added by default (TrainerOptions::enable_model_summary).
//
//   #include "athanor/train/trainer.h"
//   train::TrainerOptions opts;
//   opts.callbacks.push_back(std::make_shared<train::ModelSummary>(/*max_depth=*/2));
#pragma once

#include <ostream>

#include "athanor/train/callback.h"

namespace ath::train {

class ModelSummary : public Callback {
 public:
  explicit ModelSummary(int max_depth = 1, std::ostream* out = nullptr);

  std::string state_key() const override { return "ModelSummary"; }
  void on_fit_start(Trainer& trainer, TrainingModule& module) override;

 private:
  int max_depth_;
  std::ostream* out_;  // null: stdout
};

}  // namespace ath::train
