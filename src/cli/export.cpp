// `athanor export` (see athanor/cli/export.h): checkpoint -> config -> model -> ONNX file, then
// the file run through InferenceSession against the eager forward.
#include "athanor/cli/export.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <cmath>

#include "athanor/cli/athanor_schema.h"
#include "athanor/cli/config.h"
#include "athanor/cli/run.h"
#include "athanor/onnx/export.h"
#include "athanor/onnx/session.h"
#include "athanor/ops/creation.h"
#include "athanor/ops/pointwise.h"
#include "athanor/ops/reduction.h"
#include "athanor/tensor/grad_mode.h"
#include "athanor/train/checkpoint.h"

namespace ath::cli {

namespace {

using nlohmann::json;

// The config `fit` ran with: defaults, the checkpoint's model and data sections (saved as its
// hyperparameters), then the files and overrides given here.
json export_config(const ExportArgs& args, const train::CheckpointFile& ckpt) {
  const Schema schema = athanor_schema();
  json config = resolve_config(schema, default_config_yaml(), {}, {});
  const json& hp = ckpt.meta.contains("hyper_parameters") ? ckpt.meta["hyper_parameters"] : json();
  json saved = json::object();
  for (const char* section : {"model", "data"}) {
    if (hp.is_object() && hp.contains(section)) saved[section] = hp[section];
  }
  // JSON is YAML: the saved sections go through the same checks as a config file.
  if (!saved.empty())
    merge_yaml(schema, config, saved.dump(), args.ckpt_path + " (hyper_parameters)");
  for (const std::string& f : args.config_files) merge_yaml_file(schema, config, f);
  for (const Override& o : parse_overrides(args.overrides)) apply_override(schema, config, o);
  return config;
}

std::vector<int64_t> parse_shape(const std::string& text) {
  std::vector<int64_t> dims;
  const char* p = text.data();
  const char* const end = p + text.size();
  while (p != end) {
    int64_t d = 0;
    const auto [next, ec] = std::from_chars(p, end, d);
    ATH_CHECK(ec == std::errc() && d > 0 && (next == end || *next == ','), cli::ConfigError,
              "--input_shape: expected positive integers separated by commas (batch first, "
              "e.g. 1,1,28,28), got '{}'",
              text);
    dims.push_back(d);
    p = next == end ? end : next + 1;
  }
  ATH_CHECK(!dims.empty(), cli::ConfigError, "--input_shape is empty");
  return dims;
}

// The example input: zeros of --input_shape (token 0 for the byte-level models), or the first
// training batch (its first 4 samples when the batch dim is symbolic anyway).
Tensor example_input(const ExportArgs& args, const json& config, RunData& data) {
  const std::string model = config.at("model").at("name").get<std::string>();
  const bool tokens = model == "char_lstm" || model == "char_transformer";
  if (!args.input_shape.empty()) {
    const std::vector<int64_t> dims = parse_shape(args.input_shape);
    return zeros(Shape(dims.begin(), dims.end()), tokens ? kInt64 : kFloat32);
  }
  ATH_CHECK(data.train != nullptr, cli::ConfigError,
            "the data section gives no training batches for an example input; pass "
            "--input_shape");
  data.train->start_epoch(0);
  std::optional<data::Batch> batch = data.train->next();
  ATH_CHECK(batch && batch->size() > 0, cli::ConfigError,
            "the training data is empty; pass --input_shape for the example input");
  Tensor x = (*batch)[0];
  if (args.dynamic_batch && x.size(0) > 4) x = x.slice(0, 0, 4).contiguous();
  return x;
}

std::string type_list(const std::vector<onnx::TensorInfo>& infos) {
  std::string s;
  for (const auto& i : infos) s += (s.empty() ? "" : ", ") + i.name + ": " + i.type_string();
  return s;
}

}  // namespace

ExportReport export_checkpoint(const ExportArgs& args, std::ostream& out) {
  ATH_CHECK(!args.ckpt_path.empty(), cli::ConfigError, "--ckpt_path is required");
  ATH_CHECK(!args.output.empty(), cli::ConfigError, "--output is required");
  const train::CheckpointFile ckpt = [&] {
    try {
      return train::load_checkpoint(args.ckpt_path);
    } catch (Error& e) {
      e.prepend("--ckpt_path: ");
      throw;
    }
  }();
  const json config = export_config(args, ckpt);
  const bool needs_data =
      args.input_shape.empty() || config.at("model").at("name").get<std::string>() == "tabular_mlp";
  RunData data = needs_data ? build_data(config) : RunData{};
  std::shared_ptr<nn::Module> net = build_model(config.at("model"), data.features, data.classes);
  const StateDict weights = ckpt.section("state_dict.net");
  ATH_CHECK(!weights.empty(), FormatError,
            "{}: no model weights (tensors under 'state_dict.net.'): not a checkpoint of "
            "`athanor fit`",
            args.ckpt_path);
  try {
    net->load_state_dict(weights);
  } catch (Error& e) {
    e.prepend(fmt::format("{}: the weights do not fit model.name '{}': ", args.ckpt_path,
                          config.at("model").at("name").get<std::string>()));
    throw;
  }
  const Tensor x = example_input(args, config, data);

  const onnx::ExportResult r = onnx::export_model(
      *net, {x}, args.output, {.opset = args.opset, .dynamic_batch = args.dynamic_batch});
  out << fmt::format("exported {} ({}, opset {}): {} nodes, {} initializers\n", args.output,
                     config.at("model").at("name").get<std::string>(), args.opset, r.nodes,
                     r.initializers);

  ExportReport report;
  if (!args.verify) return report;
  onnx::InferenceSession session(args.output);
  out << fmt::format("inputs: {}\noutputs: {}\n", type_list(session.inputs()),
                     type_list(session.outputs()));
  NoGradGuard no_grad;
  net->eval();
  const Tensor want = (*net)(x).to(kFloat64);
  const Tensor got = session.run({{r.inputs[0], x}})[0].to(kFloat64);
  ATH_CHECK(got.shape() == want.shape(), ValueError,
            "{}: InferenceSession returned shape {}, the model {}", args.output,
            to_string(got.shape()), to_string(want.shape()));
  report.max_abs_diff = amax(ath::abs(got - want)).item<double>();
  const double scale = std::max(amax(ath::abs(want)).item<double>(), 1e-30);
  report.max_rel_diff = report.max_abs_diff / scale;
  report.verified = std::isfinite(report.max_rel_diff) && report.max_rel_diff <= 1e-4;
  out << fmt::format(
      "InferenceSession on the example {}: max abs diff {:.3g}, relative to the largest output "
      "{:.3g} ({})\n",
      to_string(x.shape()), report.max_abs_diff, report.max_rel_diff,
      report.verified ? "ok" : "MISMATCH");
  return report;
}

ExportCommand::ExportCommand(CLI::App& app) {
  sub_ = app.add_subcommand("export", "Export a checkpoint's model as an ONNX file");
  sub_->allow_extras();
  sub_->add_option("--ckpt_path", args_.ckpt_path, "The checkpoint (from `athanor fit`)")
      ->required()
      ->type_name("FILE");
  sub_->add_option("--output", args_.output, "The ONNX file to write")
      ->required()
      ->type_name("FILE");
  sub_->add_option("--config", args_.config_files,
                   "A YAML config over the checkpoint's saved model and data sections; repeat "
                   "to merge several")
      ->allow_extra_args(false)
      ->type_name("FILE");
  sub_->add_option("--opset", args_.opset, "ONNX opset (13 to 17)")->capture_default_str();
  sub_->add_option("--dynamic_batch", args_.dynamic_batch, "Make the batch dim symbolic ('batch')")
      ->capture_default_str();
  sub_->add_option("--input_shape", args_.input_shape,
                   "The example input's shape, batch first (default: the data's first batch)")
      ->type_name("B,D1,...");
  sub_->add_option("--verify", args_.verify,
                   "Run the file with InferenceSession and compare with the model")
      ->capture_default_str();
  sub_->footer("Further --section.key=value arguments override the config (e.g. --data.root=DIR).");
}

bool ExportCommand::parsed() const { return sub_->parsed(); }

int ExportCommand::run(std::ostream& out, std::ostream& err) {
  args_.overrides = sub_->remaining();
  try {
    const ExportReport r = export_checkpoint(args_, out);
    if (args_.verify && !r.verified) {
      err << "athanor: error: " << args_.output
          << " does not reproduce the model's forward (see above)\n";
      return 1;
    }
    return 0;
  } catch (const Error& e) {
    err << "athanor: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    err << "athanor: error: export: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace ath::cli
