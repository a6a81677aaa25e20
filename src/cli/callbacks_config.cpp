// build_callbacks: LightningCLI-style callback entries -> athanor callbacks.
#include "athanor/cli/callbacks_config.h"

#include "athanor/cli/run.h"
#include "athanor/cli/schema.h"
#include "athanor/train/callbacks/early_stopping.h"
#include "athanor/train/callbacks/learning_rate_monitor.h"
#include "athanor/train/callbacks/model_checkpoint.h"
#include "athanor/train/callbacks/model_summary.h"
#include "athanor/train/callbacks/progress_bar_callback.h"
#include "athanor/train/callbacks/timer.h"

namespace ath::cli {

using nlohmann::json;

namespace {
template <class T>
std::optional<T> opt(const json& a, const char* key) {
  if (!a.contains(key) || a.at(key).is_null()) return std::nullopt;
  return a.at(key).get<T>();
}

std::shared_ptr<train::Callback> model_checkpoint(const json& a) {
  train::ModelCheckpointOptions o;
  o.dirpath = opt<std::string>(a, "dirpath").value_or("");
  o.filename = opt<std::string>(a, "filename").value_or("");
  o.monitor = opt<std::string>(a, "monitor").value_or("");
  o.mode = a.at("mode").get<std::string>();
  o.save_top_k = a.at("save_top_k").get<int64_t>();
  o.save_last = opt<bool>(a, "save_last").value_or(false);
  o.save_weights_only = a.at("save_weights_only").get<bool>();
  o.auto_insert_metric_name = a.at("auto_insert_metric_name").get<bool>();
  o.every_n_train_steps = opt<int64_t>(a, "every_n_train_steps").value_or(0);
  o.every_n_epochs = opt<int64_t>(a, "every_n_epochs").value_or(1);
  if (auto t = opt<std::string>(a, "train_time_interval")) {
    o.train_time_interval_s = parse_duration(*t, "ModelCheckpoint.train_time_interval");
  }
  o.verbose = a.at("verbose").get<bool>();
  return std::make_shared<train::ModelCheckpoint>(o);
}

std::shared_ptr<train::Callback> early_stopping(const json& a) {
  train::EarlyStoppingOptions o;
  auto monitor = opt<std::string>(a, "monitor");
  ATH_CHECK(monitor.has_value(), cli::ConfigError, "EarlyStopping: init_args.monitor is required");
  o.monitor = *monitor;
  o.min_delta = a.at("min_delta").get<double>();
  o.patience = a.at("patience").get<int64_t>();
  o.mode = a.at("mode").get<std::string>();
  o.strict = a.at("strict").get<bool>();
  o.check_finite = a.at("check_finite").get<bool>();
  o.stopping_threshold = opt<double>(a, "stopping_threshold");
  o.divergence_threshold = opt<double>(a, "divergence_threshold");
  o.check_on_train_epoch_end = opt<bool>(a, "check_on_train_epoch_end").value_or(true);
  o.verbose = a.at("verbose").get<bool>();
  return std::make_shared<train::EarlyStopping>(o);
}
}  // namespace

std::vector<std::shared_ptr<train::Callback>> build_callbacks(const json& list) {
  std::vector<std::shared_ptr<train::Callback>> out;
  for (const json& entry : list) {
    const std::string cls = entry.at("class_path").get<std::string>();
    const json args = entry.contains("init_args") ? entry.at("init_args") : json::object();
    if (cls == "ModelCheckpoint") {
      out.push_back(model_checkpoint(args));
    } else if (cls == "EarlyStopping") {
      out.push_back(early_stopping(args));
    } else if (cls == "ModelSummary") {
      out.push_back(std::make_shared<train::ModelSummary>(args.value("max_depth", 1)));
    } else if (cls == "LearningRateMonitor") {
      out.push_back(std::make_shared<train::LearningRateMonitor>(train::LearningRateMonitorOptions{
          .logging_interval = opt<std::string>(args, "logging_interval").value_or(""),
          .log_momentum = args.value("log_momentum", false),
          .log_weight_decay = args.value("log_weight_decay", false)}));
    } else if (cls == "TQDMProgressBar") {
      const int64_t rate = args.value("refresh_rate", int64_t{1});
      if (rate > 0) {  // 0 switches the bar off, as in Lightning
        out.push_back(std::make_shared<train::TQDMProgressBar>(
            train::ProgressBarOptions{.refresh_every = rate == 1 ? 0 : rate}));
      }
    } else if (cls == "Timer") {
      train::TimerOptions o;
      if (auto d = opt<std::string>(args, "duration")) o.duration = *d;
      o.interval = args.value("interval", std::string("step"));
      o.verbose = args.value("verbose", true);
      out.push_back(std::make_shared<train::Timer>(o));
    } else {
      ATH_THROW(cli::ConfigError, "trainer.callbacks: unknown class '{}'", cls);
    }
  }
  return out;
}

}  // namespace ath::cli
