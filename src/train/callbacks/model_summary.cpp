#include "athanor/train/callbacks/model_summary.h"

#include <iostream>

#include "athanor/nn/summary.h"
#include "athanor/train/trainer.h"

namespace ath::train {

ModelSummary::ModelSummary(int max_depth, std::ostream* out) : max_depth_(max_depth), out_(out) {}

void ModelSummary::on_fit_start(Trainer& trainer, TrainingModule& module) {
  if (!trainer.is_global_zero()) return;  // one summary per run, from rank 0 (as Lightning)
  const Tensor example = module.example_input();
  const std::string text = nn::summarize(module, example, max_depth_).to_string();
  (out_ != nullptr ? *out_ : std::cout) << text << "\n";
  for (const auto& lg : trainer.loggers()) lg->log_text("model_summary", text);
}

}  // namespace ath::train
