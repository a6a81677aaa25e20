// LearningRateMonitor (see the header), following Lightning's naming and interval rules.
#include "athanor/train/callbacks/learning_rate_monitor.h"

#include <fmt/format.h>

#include "athanor/core/error.h"
#include "athanor/train/trainer.h"

namespace ath::train {

LearningRateMonitor::LearningRateMonitor(LearningRateMonitorOptions options)
    : options_(std::move(options)) {
  const std::string& i = options_.logging_interval;
  ATH_CHECK(i.empty() || i == "step" || i == "epoch", ValueError,
            "LearningRateMonitor: logging_interval must be 'step', 'epoch' or '' (auto), got '{}'",
            i);
}

void LearningRateMonitor::on_train_start(Trainer& trainer, TrainingModule&) {
  // fast_dev_run and barebones switch logging off on purpose (Lightning swaps in a dummy
  // logger there): the monitor then has nothing to do, which is no configuration error.
  const TrainerOptions& o = trainer.options();
  // Ranks other than 0 of a data-parallel run log nothing (Lightning's loggers are rank-zero
  // only), so they have no logger on purpose too.
  const bool logging_switched_off = o.fast_dev_run > 0 || o.barebones || !trainer.is_global_zero();
  ATH_CHECK(!trainer.loggers().empty() || logging_switched_off, ValueError,
            "LearningRateMonitor: the Trainer has no logger, so there is nowhere to log the "
            "learning rate (add a logger or remove the callback)");
  last_step_logged_ = -1;
}

Metrics LearningRateMonitor::extract_stats(Trainer& trainer, const std::string& interval) const {
  Metrics out;
  optim::Optimizer* opt = trainer.optimizer();
  if (opt == nullptr) return out;
  const auto& scheds = trainer.lr_schedulers();
  std::string name = "lr-" + opt->name();
  if (!scheds.empty()) {
    // The (single) optimizer has a scheduler: logged only at the scheduler's interval.
    const auto& o = scheds.front().options();
    const std::string sched_interval = o.interval == SchedulerInterval::Step ? "step" : "epoch";
    if (interval != "any" && interval != sched_interval) return out;
    if (!o.name.empty()) name = o.name;
  }
  const std::size_t groups = opt->num_param_groups();
  nlohmann::json group_json;
  if (options_.log_weight_decay) group_json = opt->state_dict().meta.at("param_groups");
  for (std::size_t g = 0; g < groups; ++g) {
    const std::string key = groups > 1 ? fmt::format("{}/pg{}", name, g + 1) : name;
    out[key] = opt->lr(g);
    if (options_.log_momentum) {
      out[key + "-momentum"] =
          opt->momentum_kind() == optim::MomentumKind::None ? 0.0 : opt->momentum(g);
    }
    if (options_.log_weight_decay) {
      out[key + "-weight_decay"] = group_json[g].value("weight_decay", 0.0);
    }
  }
  return out;
}

void LearningRateMonitor::on_train_batch_start(Trainer& trainer, TrainingModule&,
                                               const data::Batch&, int64_t) {
  if (options_.logging_interval == "epoch") return;
  // Lightning logs when the step about to be taken is a logging step; once per step even when
  // several batches accumulate into it.
  const int64_t step = trainer.global_step();
  if ((step + 1) % trainer.options().log_every_n_steps != 0 && !trainer.should_stop()) return;
  if (step == last_step_logged_) return;
  last_step_logged_ = step;
  Metrics m = extract_stats(trainer, options_.logging_interval.empty() ? "step" : "any");
  trainer.log_to_loggers(m);
}

void LearningRateMonitor::on_train_epoch_start(Trainer& trainer, TrainingModule&) {
  if (options_.logging_interval == "step") return;
  Metrics m = extract_stats(trainer, options_.logging_interval.empty() ? "epoch" : "any");
  trainer.log_to_loggers(m);
}

}  // namespace ath::train
