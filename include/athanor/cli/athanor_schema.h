// The athanor command's run configuration: sections seed_everything, trainer (Lightning's
// Trainer arguments, names and defaults), model, data and ckpt_path, and the embedded default
// run (W2's CNN on Fashion-MNIST) used when a subcommand gets no --config.
//
//   #include "athanor/cli/config.h"
//   cli::Schema schema = cli::athanor_schema();
//   nlohmann::json cfg = cli::resolve_config(schema, cli::default_config_yaml(), {}, {});
//   assert(cfg["trainer"]["max_epochs"] == 3);
//   assert(cfg["trainer"]["callbacks"][0]["class_path"] == "ModelCheckpoint");
//
// The config handed to run_command has exactly the schema's keys (see docs/cli.md).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "athanor/cli/schema.h"

namespace ath::cli {

// The callbacks trainer.callbacks may name, with Lightning's init_args and defaults:
// ModelCheckpoint, EarlyStopping, LearningRateMonitor, ModelSummary, TQDMProgressBar, Timer.
std::vector<ClassSpec> default_callback_classes();

// The full schema; `callback_classes` are the classes trainer.callbacks accepts.
Schema athanor_schema(const std::vector<ClassSpec>& callback_classes = default_callback_classes());

// The embedded default run, as YAML (what `athanor fit --print_config` shows without --config).
std::string_view default_config_yaml();

// Allowed values of the enum-like keys.
const std::vector<std::string>& model_names();  // fashion_mlp fashion_cnn char_lstm ...
const std::vector<std::string>& data_names();   // fashion-mnist mnist-folder text csv

}  // namespace ath::cli
