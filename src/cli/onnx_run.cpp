#include "athanor/cli/onnx_run.h"

#include <fmt/format.h>

#include <filesystem>
#include <map>

#include "athanor/core/error.h"
#include "athanor/io/npy.h"
#include "athanor/onnx/session.h"
#include "athanor/ops/copy.h"
#include "onnx_common.h"

namespace ath::cli {
namespace {

// An output's name as a file name: ONNX names may hold '/', ':' and the like.
std::string file_name_for(const std::string& name) {
  std::string out;
  for (char ch : name) {
    const bool keep = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                      (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-';
    out += keep ? ch : '_';
  }
  if (out.empty() || out[0] == '.') out = "_" + out;  // no hidden files, no "." or ".."
  return out + ".npy";
}

// Output index -> the file it goes to (empty: printed only).
std::vector<std::string> output_files(const OnnxRunOptions& o,
                                      const std::vector<onnx::TensorInfo>& declared) {
  std::vector<std::string> files(declared.size());
  for (const std::string& arg : o.outputs) {
    const detail::NamedFile f = detail::split_named_file(arg, "--output", declared);
    std::size_t i = 0;
    while (i < declared.size() && declared[i].name != f.name) ++i;
    if (i == declared.size()) {
      std::string names;
      for (const auto& d : declared)
        names += fmt::format("{}{}", names.empty() ? "" : ", ", d.name);
      ATH_THROW(ValueError, "--output '{}': the model has no output '{}' (its outputs: {})", arg,
                f.name, names);
    }
    ATH_CHECK(files[i].empty(), ValueError, "--output: output '{}' is given twice", f.name);
    files[i] = f.path;
  }
  if (!o.output_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.output_dir, ec);
    ATH_CHECK(!ec, IOError, "--output-dir: cannot create '{}': {}", o.output_dir, ec.message());
    std::map<std::string, std::string> taken;  // file name -> output
    for (std::size_t i = 0; i < declared.size(); ++i) {
      if (!files[i].empty()) continue;  // --output NAME=FILE wins for that output
      const std::string name = file_name_for(declared[i].name);
      const auto [it, fresh] = taken.emplace(name, declared[i].name);
      ATH_CHECK(fresh, ValueError,
                "--output-dir: outputs '{}' and '{}' would both be written to {}; name their "
                "files with --output NAME=FILE",
                it->second, declared[i].name, name);
      files[i] = (std::filesystem::path(o.output_dir) / name).string();
    }
  }
  return files;
}

int run(const OnnxRunOptions& o, std::ostream& out) {
  onnx::InferenceSession session(
      o.model, {.threads = o.threads,
                .disable_passes = o.disable_passes,
                .plan_path = o.plan,
                .batch_parallel = detail::parse_batch_parallel(o.batch_parallel)});
  const std::vector<std::string> files = output_files(o, session.outputs());
  std::vector<std::pair<std::string, Tensor>> inputs;
  for (auto& f : detail::read_input_files(o.inputs, session.inputs()))
    inputs.emplace_back(f.name, f.tensor);
  const std::vector<Tensor> outputs = session.run(inputs);
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const std::string& name = session.outputs()[i].name;
    // numpy has no bfloat16: such an output is written as float32 (exact), and says so.
    const bool widened = outputs[i].dtype() == kBFloat16 && !files[i].empty();
    if (!files[i].empty()) {
      try {
        write_npy(files[i], widened ? to_dtype(outputs[i], kFloat32) : outputs[i]);
      } catch (Error& e) {
        e.prepend(fmt::format("output '{}': ", name));
        throw;
      }
    }
    out << fmt::format("output '{}': {}{}{}\n", name, detail::type_string(outputs[i]),
                       files[i].empty() ? "" : " -> " + files[i],
                       widened ? " (as float32: numpy has no bfloat16)" : "");
  }
  return 0;
}

}  // namespace

int onnx_run(const OnnxRunOptions& options, std::ostream& out, std::ostream& err) {
  return detail::run_guarded("run", err, [&] { return run(options, out); });
}

}  // namespace ath::cli
