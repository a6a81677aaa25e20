// The athanor command's schema. Trainer keys carry Lightning's names and defaults (except
// default_root_dir, "runs"); model and data keys describe the built-in workloads.
#include "athanor/cli/athanor_schema.h"

#include <fmt/format.h>

namespace ath::cli {
namespace {

using nlohmann::json;
using Check = std::function<std::string(const json&)>;

Check at_least(int64_t lo) {
  return [lo](const json& v) {
    if (v.is_number() && v.get<double>() < static_cast<double>(lo)) {
      return fmt::format("expected a value >= {}", lo);
    }
    return std::string();
  };
}

// Lightning's int-or-float convention: an integer counts batches, a float is a fraction.
Check count_or_fraction(bool zero_fraction_ok) {
  return [zero_fraction_ok](const json& v) {
    if (v.is_number_integer() && v.get<int64_t>() < 0) return std::string("expected a count >= 0");
    if (v.is_number_float()) {
      const double x = v.get<double>();
      if (!(x >= 0.0 && x <= 1.0) || (!zero_fraction_ok && x == 0.0)) {
        return std::string(zero_fraction_ok ? "expected a fraction in [0, 1]"
                                            : "expected a fraction in (0, 1]");
      }
    }
    return std::string();
  };
}

Check fraction_below_one() {
  return [](const json& v) {
    const double x = v.get<double>();
    return x >= 0.0 && x < 1.0 ? std::string() : std::string("expected a value in [0, 1)");
  };
}

Check positive_float() {
  return [](const json& v) {
    return v.get<double>() > 0.0 ? std::string() : std::string("expected a value > 0");
  };
}

Check non_negative_float() {
  return [](const json& v) {
    return v.get<double>() >= 0.0 ? std::string() : std::string("expected a value >= 0");
  };
}

Check duration() {
  return [](const json& v) {
    // [0-9]+:[0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}, matched by hand (no std::regex: see
    // yaml_scalar.cpp).
    const std::string s = v.get<std::string>();
    std::size_t i = 0;
    bool ok = true;
    for (int field = 0; field < 4 && ok; ++field) {
      std::size_t n = 0;
      while (i + n < s.size() && s[i + n] >= '0' && s[i + n] <= '9') ++n;
      ok = n >= 1 && (field == 0 || n <= 2);
      i += n;
      if (field < 3) ok = ok && i < s.size() && s[i++] == ':';
    }
    return ok && i == s.size() ? std::string() : std::string("expected DD:HH:MM:SS");
  };
}

Check number_list(std::size_t n, bool positive_ints) {
  return [n, positive_ints](const json& v) {
    bool ok = v.size() == n;
    for (const auto& x : v) {
      ok = ok && (positive_ints ? x.is_number_integer() && x.get<int64_t>() > 0
                                : x.is_number() && x.get<double>() >= 0 && x.get<double>() < 1);
    }
    return ok ? std::string()
              : fmt::format("expected a list of {} {}", n,
                            positive_ints ? "positive integers" : "numbers in [0, 1)");
  };
}

void add_trainer(Schema& s, const std::vector<ClassSpec>& callbacks) {
  using VT = ValueType;
  auto add = [&](KeySpec k) {
    k.path = "trainer." + k.path;
    s.add(std::move(k));
  };
  add({.path = "max_epochs",
       .default_value = nullptr,
       .help = "Stop after this many epochs (null: 1000 unless max_steps is set; -1: no limit)",
       .type = VT::kInt,
       .nullable = true,
       .check = at_least(-1)});
  add({.path = "min_epochs",
       .default_value = nullptr,
       .help = "Keep training at least this many epochs (early stopping waits)",
       .type = VT::kInt,
       .nullable = true,
       .check = at_least(0)});
  add({.path = "max_steps",
       .default_value = -1,
       .help = "Stop after this many optimizer steps (-1: no limit)",
       .check = at_least(-1)});
  add({.path = "min_steps",
       .default_value = nullptr,
       .help = "Train at least this many steps",
       .type = VT::kInt,
       .nullable = true,
       .check = at_least(0)});
  add({.path = "max_time",
       .default_value = nullptr,
       .help = "Stop after this much wall time, \"DD:HH:MM:SS\"",
       .type = VT::kString,
       .nullable = true,
       .check = duration()});
  for (const char* stage : {"train", "val", "test", "predict"}) {
    add({.path = fmt::format("limit_{}_batches", stage),
         .default_value = 1.0,
         .help =
             fmt::format("{} batches per epoch: a float is a fraction, an integer a count", stage),
         .type = VT::kNumber,
         .nullable = true,
         .check = count_or_fraction(true)});
  }
  add({.path = "overfit_batches",
       .default_value = 0.0,
       .help = "Train and validate on this many (int) or this fraction (float) of train batches",
       .type = VT::kNumber,
       .check = count_or_fraction(true)});
  add({.path = "val_check_interval",
       .default_value = 1.0,
       .help = "Validate every this fraction of an epoch (float) or this many batches (int)",
       .type = VT::kNumber,
       .nullable = true,
       .check = count_or_fraction(false)});
  add({.path = "check_val_every_n_epoch",
       .default_value = 1,
       .help = "Validate every n epochs (null: only on val_check_interval steps)",
       .type = VT::kInt,
       .nullable = true,
       .check = at_least(1)});
  add({.path = "num_sanity_val_steps",
       .default_value = 2,
       .help = "Validation batches run before training (-1: all)",
       .type = VT::kInt,
       .nullable = true,
       .check = at_least(-1)});
  add({.path = "accumulate_grad_batches",
       .default_value = 1,
       .help = "Accumulate gradients over this many batches per optimizer step",
       .check = at_least(1)});
  add({.path = "gradient_clip_val",
       .default_value = nullptr,
       .help = "Clip gradients at this value (null or 0: no clipping)",
       .type = VT::kFloat,
       .nullable = true,
       .check = non_negative_float()});
  add({.path = "gradient_clip_algorithm",
       .default_value = "norm",
       .help = "How gradient_clip_val clips: by total norm or by value",
       .nullable = true,
       .choices = {"norm", "value"}});
  add({.path = "precision",
       .default_value = "32-true",
       .help = "Numeric precision: float32, bf16/fp16 autocast with float32 master weights "
               "(-mixed), or the whole model in bf16/fp16 (-true)",
       .choices = {"32-true", "bf16-mixed", "16-mixed", "bf16-true", "16-true"}});
  add({.path = "strategy",
       .default_value = "auto",
       .help = "Where training runs: one process (auto), or data-parallel over the ranks of "
               "`mpirun -n N` (ddp; ddp_zero1 also shards the optimizer state); auto is ddp "
               "when devices x num_nodes > 1",
       .choices = {"auto", "single_device", "ddp", "ddp_zero1"}});
  add({.path = "devices",
       .default_value = 1,
       .help = "Processes per machine; above 1, athanor starts them itself through mpirun (each "
               "gets an equal share of the cores)",
       .check = at_least(1)});
  add({.path = "num_nodes",
       .default_value = 1,
       .help = "Machines; above 1, mpirun starts `devices` processes on each machine of "
               "trainer.hostfile",
       .check = at_least(1)});
  add({.path = "hostfile",
       .default_value = nullptr,
       .help = "An OpenMPI hostfile naming the machines (required when num_nodes > 1)",
       .type = VT::kString,
       .nullable = true});
  add({.path = "deterministic",
       .default_value = false,
       .help = "Refuse nondeterministic algorithms (athanor's CPU kernels always are)"});
  add({.path = "fast_dev_run",
       .default_value = false,
       .help = "Run 1 (true) or n (int) batches of train/val/test as a smoke test",
       .type = VT::kIntOrBool,
       .check = at_least(0)});
  add({.path = "log_every_n_steps",
       .default_value = 50,
       .help = "Log metrics every n steps",
       .type = VT::kInt,
       .nullable = true,
       .check = at_least(1)});
  add({.path = "default_root_dir",
       .default_value = "runs",
       .help = "Where logs and checkpoints go when no logger or callback says otherwise"});
  add({.path = "enable_checkpointing",
       .default_value = true,
       .help = "Add a ModelCheckpoint when callbacks has none"});
  add({.path = "enable_progress_bar", .default_value = true, .help = "Show a progress bar"});
  add({.path = "enable_model_summary",
       .default_value = true,
       .help = "Print a model summary before fitting"});
  add({.path = "detect_anomaly",
       .default_value = false,
       .help = "Autograd anomaly mode: fail at the op that produced a NaN/inf gradient"});
  add({.path = "compile",
       .default_value = false,
       .help = "Compile the training step into a replayed, fused graph (docs/compiler.md)"});
  add({.path = "barebones",
       .default_value = false,
       .help = "Turn off every feature that costs time (logging, checkpoints, progress bar)"});
  add({.path = "callbacks",
       .default_value = json::array(),
       .help = "Callbacks: a list of {class_path, init_args}",
       .type = VT::kClassList,
       .classes = callbacks});
}

void add_model(Schema& s) {
  using VT = ValueType;
  auto add = [&](KeySpec k) {
    k.path = "model." + k.path;
    s.add(std::move(k));
  };
  add({.path = "name",
       .default_value = "fashion_cnn",
       .help = "Built-in model",
       .choices = model_names()});
  add({.path = "optimizer",
       .default_value = "adam",
       .help = "Optimizer",
       .choices = {"sgd", "adam", "adamw"}});
  add({.path = "lr", .default_value = 1e-3, .help = "Learning rate", .check = positive_float()});
  add({.path = "momentum",
       .default_value = 0.0,
       .help = "SGD momentum",
       .check = fraction_below_one()});
  add({.path = "nesterov", .default_value = false, .help = "SGD with Nesterov momentum"});
  add({.path = "betas",
       .default_value = json::array({0.9, 0.999}),
       .help = "Adam/AdamW coefficients of the running averages",
       .check = number_list(2, false)});
  add({.path = "weight_decay",
       .default_value = 0.0,
       .help = "Weight decay (L2 for sgd/adam, decoupled for adamw)",
       .check = non_negative_float()});
  add({.path = "scheduler",
       .default_value = "none",
       .help = "Learning-rate schedule",
       .choices = {"none", "step", "cosine", "onecycle"}});
  add({.path = "step_size",
       .default_value = 1,
       .help = "step: epochs between decays",
       .check = at_least(1)});
  add({.path = "gamma",
       .default_value = 0.7,
       .help = "step: decay factor",
       .check = positive_float()});
  add({.path = "t_max",
       .default_value = nullptr,
       .help = "cosine: epochs of one half-cosine (null: trainer.max_epochs)",
       .type = VT::kInt,
       .nullable = true,
       .check = at_least(1)});
  add({.path = "eta_min",
       .default_value = 0.0,
       .help = "cosine: the final learning rate",
       .check = non_negative_float()});
  add({.path = "max_lr",
       .default_value = nullptr,
       .help = "onecycle: the peak learning rate (null: model.lr)",
       .type = VT::kFloat,
       .nullable = true,
       .check = positive_float()});
  add({.path = "pct_start",
       .default_value = 0.3,
       .help = "onecycle: fraction of the steps spent warming up",
       .check = fraction_below_one()});
  add({.path = "hidden",
       .default_value = 64,
       .help = "tabular_mlp: hidden units (the input and output sizes come from the CSV)",
       .check = at_least(1)});
  add({.path = "resnet.layers",
       .default_value = json::array({2, 2, 2, 2}),
       .help = "resnet: BasicBlocks per stage ([2,2,2,2] is resnet18, [3,4,6,3] resnet34)",
       .check = number_list(4, true)});
  add({.path = "resnet.width",
       .default_value = 16,
       .help = "resnet: channels of the first stage (torchvision: 64)",
       .check = at_least(1)});
  add({.path = "resnet.small_input",
       .default_value = true,
       .help = "resnet: 3x3 stride-1 stem without max-pool, for 28x28 images"});
  add({.path = "resnet.in_channels",
       .default_value = 1,
       .help = "resnet: input channels",
       .check = at_least(1)});
  add({.path = "resnet.num_classes",
       .default_value = 10,
       .help = "resnet: output classes",
       .check = at_least(1)});
}

void add_data(Schema& s) {
  using VT = ValueType;
  auto add = [&](KeySpec k) {
    k.path = "data." + k.path;
    s.add(std::move(k));
  };
  add({.path = "name",
       .default_value = "fashion-mnist",
       .help = "Dataset",
       .choices = data_names()});
  add({.path = "root",
       .default_value = "/usr/share/datasets/fashion-mnist",
       .help = "fashion-mnist / mnist-folder: the directory of the IDX files"});
  add({.path = "path",
       .default_value = nullptr,
       .help = "text / csv: the file to read",
       .type = VT::kString,
       .nullable = true});
  add({.path = "batch_size",
       .default_value = 64,
       .help = "Samples per batch",
       .check = at_least(1)});
  add({.path = "num_workers",
       .default_value = 0,
       .help = "Loader worker threads (0: inline)",
       .check = at_least(0)});
  add({.path = "val_fraction",
       .default_value = 0.1,
       .help = "Fraction of the training data held out for validation",
       .check = fraction_below_one()});
  add({.path = "seq_len",
       .default_value = 128,
       .help = "text: tokens per sample",
       .check = at_least(1)});
  add({.path = "target",
       .default_value = nullptr,
       .help = "csv: the target column's name (null: the last column)",
       .type = VT::kString,
       .nullable = true});
  add({.path = "shuffle", .default_value = true, .help = "Shuffle the training data each epoch"});
  add({.path = "seed",
       .default_value = nullptr,
       .help = "Seed of the split and shuffling (null: seed_everything)",
       .type = VT::kInt,
       .nullable = true});
}

}  // namespace

const std::vector<std::string>& model_names() {
  static const std::vector<std::string> names = {"fashion_mlp",      "fashion_cnn", "char_lstm",
                                                 "char_transformer", "resnet",      "tabular_mlp"};
  return names;
}

const std::vector<std::string>& data_names() {
  static const std::vector<std::string> names = {"fashion-mnist", "mnist-folder", "text", "csv"};
  return names;
}

Schema athanor_schema(const std::vector<ClassSpec>& callback_classes) {
  Schema s;
  s.add({.path = "seed_everything",
         .default_value = 0,
         .help = "Seed of every random number generator (null: do not seed)",
         .type = ValueType::kInt,
         .nullable = true});
  add_trainer(s, callback_classes);
  add_model(s);
  add_data(s);
  s.add({.path = "ckpt_path",
         .default_value = nullptr,
         .help = "Checkpoint to resume from / evaluate: \"last\", \"best\" or a path",
         .type = ValueType::kString,
         .nullable = true});
  return s;
}

}  // namespace ath::cli
