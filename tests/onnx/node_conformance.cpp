#include "onnx/node_conformance.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>

#include "athanor/core/error.h"
#include "athanor/onnx/session.h"
#include "athanor/onnx/tensor_file.h"
#include "athanor/ops/copy.h"
#include "onnx/onnx_pb.h"
#include "onnx/tensor_proto.h"

namespace ath::onnx::testing {

namespace fs = std::filesystem;

namespace {

std::string first_line(const std::string& s) {
  std::string line = s.substr(0, s.find('\n'));
  // keep it short, and one token-stream: the expectations file is line-based
  if (line.size() > 300) line = line.substr(0, 300) + "...";
  return line;
}

std::vector<std::string> model_ops(const fs::path& model) {
  std::ifstream in(model, std::ios::binary);
  ::onnx::ModelProto proto;
  std::vector<std::string> ops;
  if (!proto.ParseFromIstream(&in)) return ops;
  for (const auto& n : proto.graph().node()) {
    if (std::find(ops.begin(), ops.end(), n.op_type()) == ops.end()) ops.push_back(n.op_type());
  }
  return ops;
}

std::vector<fs::path> numbered(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> files;
  for (int i = 0;; ++i) {
    fs::path p = dir / (prefix + std::to_string(i) + ".pb");
    if (!fs::exists(p)) break;
    files.push_back(p);
  }
  return files;
}

// ONNX's backend tests compare with numpy's assert_allclose(rtol=1e-3, atol=1e-7); athanor's
// float kernels (vectorized exp, oneDNN GEMMs) round differently in the last bits, so absolute
// differences up to 1e-5 are accepted too. Integers and booleans must match exactly.
std::string compare(const Tensor& got, const Tensor& want, int index) {
  if (got.dtype() != want.dtype())
    return fmt::format("output {}: dtype {} instead of {}", index, got.dtype(), want.dtype());
  if (got.shape() != want.shape())
    return fmt::format("output {}: shape [{}] instead of [{}]", index, fmt::join(got.shape(), ","),
                       fmt::join(want.shape(), ","));
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i]) && std::isnan(g[i])) continue;
    if (g[i] == w[i]) continue;
    const double tol = is_floating(want.dtype()) ? 1e-5 + 1e-3 * std::abs(w[i]) : 0.0;
    if (!(std::abs(g[i] - w[i]) <= tol))
      return fmt::format("output {}: element {} is {} instead of {}", index, i, g[i], w[i]);
  }
  return {};
}

// Reads a test tensor. ONNX 1.12's generator stores bfloat16 data as uint16 bit patterns
// (numpy has no bfloat16): where the model declares bfloat16, such a tensor is read as one.
Tensor read_test_tensor(const fs::path& file, std::optional<DType> declared, std::string* name) {
  std::ifstream in(file, std::ios::binary);
  ::onnx::TensorProto proto;
  if (!proto.ParseFromIstream(&in)) throw FormatError(file.string() + ": not a TensorProto");
  if (proto.data_type() == ::onnx::TensorProto::UINT16 && declared == DType::BFloat16)
    proto.set_data_type(::onnx::TensorProto::BFLOAT16);
  if (name != nullptr) *name = proto.name();
  return detail::tensor_from_proto(proto, file.parent_path(), file.string());
}

std::optional<DType> declared_type(const std::vector<TensorInfo>& infos, std::size_t i) {
  if (i < infos.size() && infos[i].dtype_known) return infos[i].dtype;
  return std::nullopt;
}

}  // namespace

std::vector<fs::path> list_tests(const fs::path& suite) {
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(suite)) {
    if (e.is_directory() && fs::exists(e.path() / "model.onnx")) dirs.push_back(e.path());
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

NodeTestResult run_node_test(const fs::path& dir) {
  NodeTestResult r{.name = dir.filename().string(),
                   .status = "passed",
                   .reason = {},
                   .ops = {},
                   .replayed = false};
  r.ops = model_ops(dir / "model.onnx");
  try {
    InferenceSession session((dir / "model.onnx").string());
    for (const auto& e : fs::directory_iterator(dir)) {
      if (!e.is_directory() || e.path().filename().string().rfind("test_data_set_", 0) != 0)
        continue;
      std::vector<std::pair<std::string, Tensor>> inputs;
      const auto in_files = numbered(e.path(), "input_");
      for (std::size_t i = 0; i < in_files.size(); ++i) {
        std::string name;
        Tensor t = read_test_tensor(in_files[i], declared_type(session.inputs(), i), &name);
        if (name.empty() && i < session.inputs().size()) name = session.inputs()[i].name;
        inputs.emplace_back(name, t);
      }
      // The first run traces (its results are the eager ones); the second replays the
      // optimized graph: both must match.
      for (const char* which : {"traced run", "replayed run"}) {
        const std::vector<Tensor> outs = session.run(inputs);
        const auto out_files = numbered(e.path(), "output_");
        if (out_files.size() != outs.size()) {
          r.status = "failed";
          r.reason =
              fmt::format("{}: {} outputs instead of {}", which, outs.size(), out_files.size());
          return r;
        }
        for (std::size_t i = 0; i < outs.size(); ++i) {
          const Tensor want =
              read_test_tensor(out_files[i], declared_type(session.outputs(), i), nullptr);
          const std::string diff = compare(outs[i], want, static_cast<int>(i));
          if (!diff.empty()) {
            r.status = "failed";
            r.reason = fmt::format("{}: {}", which, diff);
            return r;
          }
        }
      }
      r.replayed = session.stats().replays > 0;
    }
  } catch (const NotImplementedError& e) {
    r.status = "unsupported";
    std::string msg = e.what();
    // the loader's list: keep the node line, not the file's path
    if (auto nl = msg.find('\n'); nl != std::string::npos) msg = msg.substr(nl + 3);
    r.reason = first_line(msg);
  } catch (const std::exception& e) {
    r.status = "failed";
    r.reason = first_line(e.what());
  }
  // The path of the test directory says nothing a reader of the expectations file needs.
  for (std::size_t p; (p = r.reason.find(dir.string())) != std::string::npos;)
    r.reason.replace(p, dir.string().size(), r.name);
  return r;
}

std::map<std::string, std::pair<std::string, std::string>> read_expectations(const fs::path& file) {
  std::map<std::string, std::pair<std::string, std::string>> out;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto a = line.find(' ');
    const auto b = line.find(' ', a + 1);
    if (a == std::string::npos) continue;
    const std::string status = line.substr(a + 1, b == std::string::npos ? b : b - a - 1);
    out[line.substr(0, a)] = {status, b == std::string::npos ? "" : line.substr(b + 1)};
  }
  return out;
}

}  // namespace ath::onnx::testing
