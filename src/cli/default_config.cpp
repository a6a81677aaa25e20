// The callbacks trainer.callbacks accepts (Lightning's init_args and defaults) and the embedded
// default run.
#include "athanor/cli/athanor_schema.h"

namespace ath::cli {

std::vector<ClassSpec> default_callback_classes() {
  using nlohmann::json;
  using VT = ValueType;
  const KeySpec monitor{.path = "monitor",
                        .default_value = nullptr,
                        .help = "Metric to watch (\"val_loss\", \"val_acc\", ...)",
                        .type = VT::kString,
                        .nullable = true};
  const KeySpec mode{.path = "mode",
                     .default_value = "min",
                     .help = "Whether lower (min) or higher (max) is better",
                     .choices = {"min", "max"}};
  const KeySpec verbose{.path = "verbose", .default_value = false, .help = "Print decisions"};
  auto optional_int = [](const char* name, const char* help) {
    return KeySpec{
        .path = name, .default_value = nullptr, .help = help, .type = VT::kInt, .nullable = true};
  };
  auto optional_bool = [](const char* name, const char* help) {
    return KeySpec{
        .path = name, .default_value = nullptr, .help = help, .type = VT::kBool, .nullable = true};
  };
  auto optional_string = [](const char* name, const char* help) {
    return KeySpec{.path = name,
                   .default_value = nullptr,
                   .help = help,
                   .type = VT::kString,
                   .nullable = true};
  };
  auto optional_float = [](const char* name, const char* help) {
    return KeySpec{
        .path = name, .default_value = nullptr, .help = help, .type = VT::kFloat, .nullable = true};
  };
  return {
      {.name = "ModelCheckpoint",
       .help = "Save checkpoints: the best top-k by a monitored metric and/or the last",
       .init_args = {optional_string("dirpath", "Directory (null: <log_dir>/checkpoints)"),
                     optional_string("filename", "Name template, e.g. \"{epoch}-{val_loss:.2f}\""),
                     monitor,
                     verbose,
                     optional_bool("save_last", "Also keep last.safetensors (null: no)"),
                     {.path = "save_top_k",
                      .default_value = 1,
                      .help = "Keep the best k (-1: all, 0: none)"},
                     {.path = "save_weights_only",
                      .default_value = false,
                      .help = "Only the model's weights, no trainer state"},
                     mode,
                     {.path = "auto_insert_metric_name",
                      .default_value = true,
                      .help = "Write \"val_loss=0.31\" rather than \"0.31\" in names"},
                     optional_int("every_n_train_steps", "Save every n training steps"),
                     optional_string("train_time_interval",
                                     "Save every this much time, DD:HH:MM:SS"),
                     optional_int("every_n_epochs", "Save every n epochs"),
                     optional_bool("save_on_train_epoch_end",
                                   "Save at the end of the training epoch, not after validation"),
                     {.path = "enable_version_counter",
                      .default_value = true,
                      .help = "Add -v1, -v2 ... instead of overwriting"}}},
      {.name = "EarlyStopping",
       .help = "Stop when a monitored metric stops improving",
       .init_args =
           {monitor,
            {.path = "min_delta", .default_value = 0.0, .help = "Smallest change that counts"},
            {.path = "patience", .default_value = 3, .help = "Checks without improvement"},
            verbose,
            mode,
            {.path = "strict", .default_value = true, .help = "Fail if the metric is missing"},
            {.path = "check_finite", .default_value = true, .help = "Stop on NaN or inf"},
            optional_float("stopping_threshold", "Stop once the metric reaches this"),
            optional_float("divergence_threshold", "Stop once the metric is worse than this"),
            optional_bool("check_on_train_epoch_end",
                          "Check at the end of the training epoch, not after validation"),
            {.path = "log_rank_zero_only", .default_value = false, .help = "Log only on rank 0"}}},
      {.name = "LearningRateMonitor",
       .help = "Log the learning rate of every optimizer parameter group",
       .init_args = {{.path = "logging_interval",
                      .default_value = nullptr,
                      .help = "\"step\" or \"epoch\" (null: the scheduler's own interval)",
                      .type = VT::kString,
                      .nullable = true,
                      .choices = {"step", "epoch"}},
                     {.path = "log_momentum", .default_value = false, .help = "Log momentum too"},
                     {.path = "log_weight_decay",
                      .default_value = false,
                      .help = "Log weight decay too"}}},
      {.name = "ModelSummary",
       .help = "Print the model summary before fitting",
       .init_args = {{.path = "max_depth",
                      .default_value = 1,
                      .help = "Depth of nested modules shown (-1: all)"}}},
      {.name = "TQDMProgressBar",
       .help = "The progress bar",
       .init_args =
           {{.path = "refresh_rate", .default_value = 1, .help = "Redraw every n batches (0: off)"},
            {.path = "process_position", .default_value = 0, .help = "Line offset of the bar"}}},
      {.name = "Timer",
       .help = "Stop after a wall-time budget and record stage times",
       .init_args = {optional_string("duration", "Budget, DD:HH:MM:SS (null: no limit)"),
                     {.path = "interval",
                      .default_value = "step",
                      .help = "Check the budget every step or every epoch",
                      .choices = {"step", "epoch"}},
                     {.path = "verbose",
                      .default_value = true,
                      .help = "Print when the budget stops training"}}},
  };
}

// W2 of WORKLOADS.md's CNN on Fashion-MNIST, Adam with a one-cycle schedule peaking at 3e-3
// (plain Adam at 1e-3 reaches about 0.903 test accuracy in 3 epochs, this about 0.917),
// batches of 64, 3 epochs; keeps the best checkpoint by validation accuracy plus the last one.
std::string_view default_config_yaml() {
  return R"yaml(# athanor's built-in run: `athanor fit` with no --config.
seed_everything: 0
trainer:
  max_epochs: 3
  default_root_dir: runs
  callbacks:
  - class_path: ModelCheckpoint
    init_args:
      monitor: val_acc
      mode: max
      save_last: true
  - class_path: LearningRateMonitor
    init_args:
      logging_interval: step
model:
  name: fashion_cnn
  optimizer: adam
  lr: 0.001
  scheduler: onecycle
  max_lr: 0.003
data:
  name: fashion-mnist
  root: /usr/share/datasets/fashion-mnist
  batch_size: 64
)yaml";
}

}  // namespace ath::cli
