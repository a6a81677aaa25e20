// What the athanor command does once its config resolved: build the model, its training task,
// the data and the Trainer the config names, then fit / validate / test / predict. The builders
// are public so tests (and programs embedding the command line) can reuse them.
//
//   #include <sstream>
//   #include "athanor/cli/athanor_schema.h"
//   #include "athanor/cli/config.h"
//   auto smoke_test = cli::parse_overrides({"--trainer.fast_dev_run=1",   // 1 batch per stage
//                                           "--trainer.enable_progress_bar=false",
//                                           "--trainer.enable_model_summary=false"});
//   nlohmann::json cfg = cli::resolve_config(cli::athanor_schema(), cli::default_config_yaml(),
//                                            {}, smoke_test);
//   auto model = cli::build_model(cfg["model"]);               // W2's CNN
//   train::TrainerOptions opts = cli::trainer_options(cfg);    // trainer: section + callbacks
//   std::ostringstream out;
//   int status = cli::run_command("fit", cfg, out);            // fit, then test the result
//   assert(status == 0);
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "athanor/data/batch_source.h"
#include "athanor/nn/module.h"
#include "athanor/train/tasks.h"
#include "athanor/train/trainer.h"

namespace ath::cli {

// config["model"] -> the model it names (fashion_mlp, fashion_cnn, char_lstm,
// char_transformer, resnet with model.resnet.*, tabular_mlp with `tabular` sizes).
// ConfigError for an unknown name.
std::shared_ptr<nn::Module> build_model(const nlohmann::json& model_config,
                                        int64_t tabular_features = 0, int64_t tabular_classes = 0);

// config["model"] -> the optimizer and schedule of the training task.
train::OptimizerSpec optimizer_spec(const nlohmann::json& model_config);

// The whole config -> TrainerOptions (the trainer: section, its callbacks, seed_everything).
train::TrainerOptions trainer_options(const nlohmann::json& config);

// "DD:HH:MM:SS" (Lightning's max_time / Timer duration) -> seconds; ConfigError naming `key`.
double parse_duration(const std::string& text, const std::string& key);

// The data the config names, split into training / validation (data.val_fraction of the
// training set, seeded) and test (the dataset's test split; the validation part where the
// dataset has none).
struct RunData {
  std::shared_ptr<data::BatchSource> train, val, test;
  int64_t features = 0, classes = 0;  // tabular data: what the model must take and give
};
RunData build_data(const nlohmann::json& config);

// Runs "fit" (then tests the fitted model, printing `test_acc=...` and where the checkpoint,
// metrics.csv and report went), "validate", "test" or "predict". Returns the exit status.
// Throws ConfigError (exit 2) for a config that cannot work, other ath::Error (exit 1) for
// failures while running.
int run_command(const std::string& subcommand, const nlohmann::json& config, std::ostream& out);

}  // namespace ath::cli
