// run_command and its builders: config -> model, task, data, Trainer (see run.h).
#include "athanor/cli/run.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <limits>
#include <ostream>

#include "athanor/cli/callbacks_config.h"
#include "athanor/cli/schema.h"
#include "athanor/data/data.h"
#include "athanor/dist/world.h"
#include "athanor/graph/compile.h"
#include "athanor/models/char_lstm.h"
#include "athanor/models/char_transformer.h"
#include "athanor/models/fashion.h"
#include "athanor/models/resnet.h"
#include "athanor/nn/activation.h"
#include "athanor/nn/linear.h"
#include "athanor/nn/sequential.h"
#include "athanor/ops/reduction.h"
#include "athanor/train/callbacks/model_checkpoint.h"

namespace ath::cli {

using nlohmann::json;

namespace {
bool is_text_model(const std::string& name) {
  return name == "char_lstm" || name == "char_transformer";
}
}  // namespace

std::shared_ptr<nn::Module> build_model(const json& m, int64_t tabular_features,
                                        int64_t tabular_classes) {
  const std::string name = m.at("name").get<std::string>();
  if (name == "fashion_mlp") return models::fashion_mlp();
  if (name == "fashion_cnn") return models::fashion_cnn();
  if (name == "char_lstm") return std::make_shared<models::CharLstm>();
  if (name == "char_transformer") return std::make_shared<models::CharTransformer>();
  if (name == "tabular_mlp") {
    ATH_CHECK(tabular_features > 0 && tabular_classes > 1, cli::ConfigError,
              "model.name tabular_mlp needs tabular data (data.name: csv) with >= 2 classes");
    const int64_t hidden = m.at("hidden").get<int64_t>();
    auto net = std::make_shared<nn::Sequential>();
    net->push_back(
        std::make_shared<nn::Linear>(nn::LinearOptions{.in = tabular_features, .out = hidden}));
    net->push_back(std::make_shared<nn::ReLU>());
    net->push_back(
        std::make_shared<nn::Linear>(nn::LinearOptions{.in = hidden, .out = tabular_classes}));
    return net;
  }
  if (name == "resnet") {
    const json& r = m.at("resnet");
    models::ResNetOptions o;
    const auto layers = r.at("layers").get<std::vector<int64_t>>();
    ATH_CHECK(layers.size() == 4, cli::ConfigError,
              "model.resnet.layers: expected 4 stages, got {}", layers.size());
    std::copy(layers.begin(), layers.end(), o.layers.begin());
    o.width = r.at("width").get<int64_t>();
    o.small_input = r.at("small_input").get<bool>();
    o.in_channels = r.at("in_channels").get<int64_t>();
    o.num_classes = r.at("num_classes").get<int64_t>();
    return std::make_shared<models::ResNet>(o);
  }
  ATH_THROW(cli::ConfigError, "model.name: unknown model '{}'", name);
}

train::OptimizerSpec optimizer_spec(const json& m) {
  train::OptimizerSpec s;
  s.name = m.at("optimizer").get<std::string>();
  s.lr = m.at("lr").get<double>();
  s.momentum = m.at("momentum").get<double>();
  s.nesterov = m.at("nesterov").get<bool>();
  const auto betas = m.at("betas").get<std::vector<double>>();
  ATH_CHECK(betas.size() == 2, cli::ConfigError, "model.betas: expected 2 numbers, got {}",
            betas.size());
  s.betas = {betas[0], betas[1]};
  s.weight_decay = m.at("weight_decay").get<double>();
  s.scheduler = m.at("scheduler").get<std::string>();
  s.step_size = m.at("step_size").get<int64_t>();
  s.gamma = m.at("gamma").get<double>();
  if (!m.at("t_max").is_null()) s.t_max = m.at("t_max").get<int64_t>();
  s.eta_min = m.at("eta_min").get<double>();
  if (!m.at("max_lr").is_null()) s.max_lr = m.at("max_lr").get<double>();
  s.pct_start = m.at("pct_start").get<double>();
  return s;
}

double parse_duration(const std::string& text, const std::string& key) {
  // Four non-negative integer fields, each read with from_chars (sscanf's %d overflowed
  // silently: 4294967296 days read as 0). Any field may exceed its clock range (Lightning's
  // timedelta takes 90:00 minutes too); the total is bounded instead.
  constexpr double kMaxDays = 100 * 365.25;
  int64_t f[4] = {};
  const char* p = text.data();
  const char* const end = text.data() + text.size();
  bool ok = true;
  for (int i = 0; i < 4 && ok; ++i) {
    if (i > 0) ok = p != end && *p++ == ':';
    ok = ok && p != end && *p >= '0' && *p <= '9';  // no sign, no empty field
    if (!ok) break;
    const auto [next, ec] = std::from_chars(p, end, f[i]);
    if (ec == std::errc::result_out_of_range) f[i] = std::numeric_limits<int64_t>::max();
    p = next;
  }
  ATH_CHECK(ok && p == end, cli::ConfigError, "{}: expected a duration DD:HH:MM:SS, got '{}'", key,
            text);
  const double seconds = ((static_cast<double>(f[0]) * 24.0 + static_cast<double>(f[1])) * 60.0 +
                          static_cast<double>(f[2])) *
                             60.0 +
                         static_cast<double>(f[3]);
  ATH_CHECK(seconds <= kMaxDays * 86400.0, cli::ConfigError,
            "{}: duration '{}' is out of range (at most 100 years, 36525:00:00:00)", key, text);
  return seconds;
}

namespace {
train::BatchLimit limit(const json& v) {
  if (v.is_number_integer()) return v.get<int64_t>();
  return v.get<double>();
}
}  // namespace

train::TrainerOptions trainer_options(const json& config) {
  const json& t = config.at("trainer");
  train::TrainerOptions o;
  if (!t.at("max_epochs").is_null()) o.max_epochs = t.at("max_epochs").get<int64_t>();
  if (!t.at("min_epochs").is_null()) o.min_epochs = t.at("min_epochs").get<int64_t>();
  o.max_steps = t.at("max_steps").get<int64_t>();
  if (!t.at("min_steps").is_null()) o.min_steps = t.at("min_steps").get<int64_t>();
  if (!t.at("max_time").is_null()) {
    o.max_time_s = parse_duration(t.at("max_time").get<std::string>(), "trainer.max_time");
  }
  o.limit_train_batches = limit(t.at("limit_train_batches"));
  o.limit_val_batches = limit(t.at("limit_val_batches"));
  o.limit_test_batches = limit(t.at("limit_test_batches"));
  o.limit_predict_batches = limit(t.at("limit_predict_batches"));
  o.overfit_batches = limit(t.at("overfit_batches"));
  o.val_check_interval = limit(t.at("val_check_interval"));
  if (t.at("check_val_every_n_epoch").is_null()) {
    o.check_val_every_n_epoch.reset();
  } else {
    o.check_val_every_n_epoch = t.at("check_val_every_n_epoch").get<int64_t>();
  }
  o.num_sanity_val_steps = t.at("num_sanity_val_steps").get<int64_t>();
  o.accumulate_grad_batches = t.at("accumulate_grad_batches").get<int64_t>();
  if (!t.at("gradient_clip_val").is_null()) {
    o.gradient_clip_val = t.at("gradient_clip_val").get<double>();
  }
  o.gradient_clip_algorithm = t.at("gradient_clip_algorithm").get<std::string>();
  o.precision = t.at("precision").get<std::string>();
  o.strategy = t.at("strategy").get<std::string>();
  const int64_t processes = t.at("devices").get<int64_t>() * t.at("num_nodes").get<int64_t>();
  if (processes > 1) {
    ATH_CHECK(o.strategy.name != "single_device", ValueError,
              "trainer.strategy=single_device runs one process, but trainer.devices x "
              "trainer.num_nodes asks for {}",
              processes);
    if (o.strategy.name == "auto") o.strategy = "ddp";
    ATH_CHECK(!dist::launched_by_mpi() || dist::world().world_size() == processes, ValueError,
              "trainer.devices x trainer.num_nodes is {}, but mpirun started {} processes",
              processes, dist::world().world_size());
  }
  o.deterministic = t.at("deterministic").get<bool>();
  const json& fdr = t.at("fast_dev_run");
  o.fast_dev_run = fdr.is_boolean() ? (fdr.get<bool>() ? 1 : 0) : fdr.get<int64_t>();
  o.log_every_n_steps = t.at("log_every_n_steps").get<int64_t>();
  o.default_root_dir = t.at("default_root_dir").get<std::string>();
  o.enable_checkpointing = t.at("enable_checkpointing").get<bool>();
  o.enable_progress_bar = t.at("enable_progress_bar").get<bool>();
  o.enable_model_summary = t.at("enable_model_summary").get<bool>();
  o.detect_anomaly = t.at("detect_anomaly").get<bool>();
  o.barebones = t.at("barebones").get<bool>();
  o.compile = t.at("compile").get<bool>();
  if (!config.at("seed_everything").is_null()) {
    o.seed = config.at("seed_everything").get<uint64_t>();
  }
  o.callbacks = build_callbacks(t.at("callbacks"));
  return o;
}

RunData build_data(const json& config) {
  const json& d = config.at("data");
  const std::string name = d.at("name").get<std::string>();
  const int64_t batch = d.at("batch_size").get<int64_t>();
  const int64_t workers = d.at("num_workers").get<int64_t>();
  const bool shuffle = d.at("shuffle").get<bool>();
  const json& seed_json = d.at("seed").is_null() ? config.at("seed_everything") : d.at("seed");
  const uint64_t seed = seed_json.is_null() ? 0 : seed_json.get<uint64_t>();
  const double val_fraction = d.at("val_fraction").get<double>();
  RunData out;
  auto loaders = [&](auto dataset, auto test_dataset) {
    using D = typename decltype(dataset)::element_type;
    data::LoaderOptions<typename D::Sample> train_opts{
        .batch_size = batch, .shuffle = shuffle, .seed = seed, .num_workers = workers};
    data::LoaderOptions<typename D::Sample> eval_opts{.batch_size = std::max<int64_t>(batch, 256),
                                                      .num_workers = workers};
    if (val_fraction > 0.0) {
      auto parts = data::random_split(dataset, {1.0 - val_fraction, val_fraction}, seed);
      out.train = data::make_loader(parts[0], train_opts);
      out.val = data::make_loader(parts[1], eval_opts);
      if (!test_dataset) out.test = data::make_loader(parts[1], eval_opts);
    } else {
      out.train = data::make_loader(dataset, train_opts);
    }
    if (test_dataset) out.test = data::make_loader(test_dataset, eval_opts);
  };
  if (name == "fashion-mnist" || name == "mnist-folder") {
    // Fashion-MNIST's and MNIST's pixel statistics (torchvision's usual constants), applied by
    // the dataset itself so batches keep the loader's one-gather fast path.
    const bool fashion = name == "fashion-mnist";
    const double mean = fashion ? 0.2860 : 0.1307, std = fashion ? 0.3530 : 0.3081;
    const std::string root = d.at("root").get<std::string>();
    std::shared_ptr<data::MnistFolder> train_set, test_set;
    try {
      train_set = std::make_shared<data::MnistFolder>(
          data::MnistOptions{.root = root, .train = true, .mean = mean, .std = std});
      test_set = std::make_shared<data::MnistFolder>(
          data::MnistOptions{.root = root, .train = false, .mean = mean, .std = std});
    } catch (IOError& e) {  // the data is missing: say which setting points at it
      e.prepend("data.root: ");
      throw;
    }
    loaders(train_set, test_set);
  } else if (name == "text") {
    ATH_CHECK(!d.at("path").is_null(), cli::ConfigError, "data.name text needs data.path (a file)");
    auto text = std::make_shared<data::TextBytesDataset>(data::TextBytesOptions{
        .paths = {d.at("path").get<std::string>()}, .seq_len = d.at("seq_len").get<int64_t>()});
    loaders(text, std::shared_ptr<data::TextBytesDataset>());
  } else if (name == "csv") {
    ATH_CHECK(!d.at("path").is_null(), cli::ConfigError, "data.name csv needs data.path (a file)");
    auto csv = std::make_shared<data::CsvDataset>(data::CsvOptions{
        .path = d.at("path").get<std::string>(),
        .target = d.at("target").is_null() ? std::string() : d.at("target").get<std::string>()});
    out.features = csv->features().size(1);
    out.classes = csv->targets().numel() > 0 ? max(csv->targets()).item<int64_t>() + 1 : 0;
    loaders(csv, std::shared_ptr<data::CsvDataset>());
  } else {
    ATH_THROW(cli::ConfigError, "data.name: unknown dataset '{}'", name);
  }
  return out;
}

namespace {
void print_metrics(std::ostream& out, const std::vector<train::Metrics>& results) {
  for (const auto& m : results) {
    for (const auto& [k, v] : m) {
      if (k != "epoch") out << fmt::format("{}={:.4f}\n", k, v);
    }
  }
}
}  // namespace

int run_command(const std::string& subcommand, const json& config, std::ostream& out) {
  ATH_CHECK(subcommand == "fit" || subcommand == "validate" || subcommand == "test" ||
                subcommand == "predict",
            ValueError, "run_command: unknown subcommand '{}'", subcommand);
  const std::string data_name = config.at("data").at("name").get<std::string>();
  const std::string model_name = config.at("model").at("name").get<std::string>();
  ATH_CHECK(is_text_model(model_name) == (data_name == "text"), cli::ConfigError,
            "model.name '{}' does not fit data.name '{}' (char models read text, the others "
            "images or tables)",
            model_name, data_name);
  ATH_CHECK((model_name == "tabular_mlp") == (data_name == "csv"), cli::ConfigError,
            "model.name '{}' does not fit data.name '{}' (tabular data goes with tabular_mlp)",
            model_name, data_name);
  train::TrainerOptions opts = trainer_options(config);
  if (opts.seed) manual_seed(*opts.seed);  // the model's initialisation too
  RunData data = build_data(config);
  std::shared_ptr<nn::Module> net = build_model(config.at("model"), data.features, data.classes);
  const train::OptimizerSpec spec = optimizer_spec(config.at("model"));
  std::unique_ptr<train::TrainingModule> task;
  if (is_text_model(model_name)) {
    task = std::make_unique<train::LanguageModelTask>(net, spec);
  } else {
    task = std::make_unique<train::ClassificationTask>(net, spec);
  }
  task->save_hyperparameters({{"model", config.at("model")}, {"data", config.at("data")}});
  const std::string ckpt =
      config.at("ckpt_path").is_null() ? std::string() : config.at("ckpt_path").get<std::string>();

  train::Trainer trainer(opts);
  // What the run reports is printed once, by rank 0 of a data-parallel run.
  std::ostream silent(nullptr);
  std::ostream& report = trainer.is_global_zero() ? out : silent;
  if (subcommand == "fit") {
    trainer.fit(*task, data.train, data.val, ckpt);
    if (!trainer.restored_checkpoint().empty())
      report << "resumed from: " << trainer.restored_checkpoint() << "\n";
    // The main job's report: test the fitted model, say where everything went.
    print_metrics(report, trainer.test(*task, data.test));
    if (const CompileStats* s = trainer.compile_stats()) {
      report << "compiled training step: " << s->traces << " traces, " << s->replays << " replays, "
             << s->eager_calls << " eager calls\n";
    }
    for (const auto& cb : trainer.callbacks()) {
      if (const auto* mc = dynamic_cast<const train::ModelCheckpoint*>(cb.get())) {
        if (!mc->best_model_path().empty())
          report << "best checkpoint: " << mc->best_model_path() << "\n";
        if (!mc->last_model_path().empty())
          report << "last checkpoint: " << mc->last_model_path() << "\n";
      }
    }
    const std::string log_dir = trainer.log_dir();
    if (std::filesystem::exists(std::filesystem::path(log_dir) / "metrics.csv")) {
      report << "metrics: " << (std::filesystem::path(log_dir) / "metrics.csv").string() << "\n";
    }
    if (std::filesystem::exists(std::filesystem::path(log_dir) / "report.html")) {
      report << "report: " << (std::filesystem::path(log_dir) / "report.html").string() << "\n";
    }
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(log_dir, ec)) {
      if (entry.path().filename().string().rfind("events.out.tfevents.", 0) == 0) {
        report << "tensorboard: tensorboard --logdir "
               << std::filesystem::path(log_dir).parent_path().string() << "\n";
        break;
      }
    }
  } else if (subcommand == "validate") {
    ATH_CHECK(data.val != nullptr, cli::ConfigError,
              "validate needs a validation split (data.val_fraction > 0)");
    print_metrics(report, trainer.validate(*task, data.val, ckpt));
  } else if (subcommand == "test") {
    print_metrics(report, trainer.test(*task, data.test, ckpt));
  } else {
    std::vector<Tensor> preds = trainer.predict(*task, data.test, ckpt);
    int64_t n = 0;
    for (const auto& p : preds) n += p.size(0);
    report << fmt::format("predictions: {} batches, {} samples\n", preds.size(), n);
  }
  if (subcommand != "fit" && !trainer.restored_checkpoint().empty())
    report << "checkpoint: " << trainer.restored_checkpoint() << "\n";
  return 0;
}

}  // namespace ath::cli
