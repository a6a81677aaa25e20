// onnx::export_model / export_function: trace, check what depends on the batch size, emit each
// live node through the op table, prune, write atomically.
#include "athanor/onnx/export.h"

#include <fmt/format.h>

#include <algorithm>
#include <span>
#include <unordered_set>

#include "../tensor_proto.h"
#include "athanor/core/error.h"
#include "athanor/graph/tracer.h"
#include "athanor/io/atomic_file.h"
#include "athanor/ops/comparison.h"
#include "athanor/ops/shaping.h"
#include "athanor/tensor/grad_mode.h"
#include "emitters.h"
#include "export_graph.h"

namespace ath::onnx {

namespace {

using detail::EmitContext;

graph::Graph trace_once(const ExportFn& fn, const std::vector<Tensor>& inputs) {
  NoGradGuard no_grad;
  graph::Tracer tracer{std::span<const Tensor>(inputs)};
  const std::vector<Tensor> outputs = fn(inputs);
  ATH_CHECK(!outputs.empty(), ValueError, "onnx::export: the function returned no tensor");
  graph::Graph g = tracer.finish(std::span<const Tensor>(outputs));
  ATH_CHECK(tracer.ok(), NotImplementedError,
            "onnx::export: the forward cannot be recorded as a graph: {}", tracer.failure());
  return g;
}

// The example inputs one sample larger: the second trace, which tells which dims follow the
// batch size.
std::vector<Tensor> one_more(const std::vector<Tensor>& inputs) {
  NoGradGuard no_grad;
  std::vector<Tensor> r;
  for (const Tensor& x : inputs) r.push_back(cat({x, x.slice(0, 0, 1)}, 0));
  return r;
}

std::vector<std::string> default_names(const std::vector<std::string>& given, std::size_t n,
                                       const char* base, const char* what) {
  if (!given.empty()) {
    ATH_CHECK(given.size() == n, ValueError, "onnx::export: {} {} names given for {} {}s",
              given.size(), what, n, what);
    std::unordered_set<std::string> seen;
    for (const auto& s : given) {
      ATH_CHECK(!s.empty() && seen.insert(s).second, ValueError,
                "onnx::export: {} names must be distinct and non-empty, got '{}'", what, s);
    }
    return given;
  }
  if (n == 1) return {base};
  std::vector<std::string> r;
  for (std::size_t i = 0; i < n; ++i) r.push_back(fmt::format("{}_{}", base, i));
  return r;
}

// The name of each state tensor: its state_dict name when it is one of `named`.
void name_state(EmitContext& ctx, const graph::Graph& g, const nn::NamedTensors& named) {
  for (std::size_t s = 0; s < g.state.size(); ++s) {
    const Tensor& t = g.state_tensors[s];
    for (const auto& [name, p] : named) {
      if (p.defined() && p.impl() == t.impl()) {
        ctx.set_state_name(g.state[s], name);
        break;
      }
    }
  }
}

}  // namespace

ExportResult export_function(const ExportFn& fn, const std::vector<Tensor>& example_inputs,
                             const nn::NamedTensors& named_state, const std::string& path,
                             const ExportOptions& options) {
  ATH_CHECK(options.opset >= 13 && options.opset <= 17, ValueError,
            "onnx::export: opset {} is not supported (13 to 17)", options.opset);
  ATH_CHECK(!example_inputs.empty(), ValueError, "onnx::export: no example inputs");
  for (std::size_t i = 0; i < example_inputs.size(); ++i) {
    const Tensor& x = example_inputs[i];
    ATH_CHECK(x.defined(), ValueError, "onnx::export: example input {} is undefined", i);
    ATH_CHECK(!options.dynamic_batch || (x.dim() >= 1 && x.size(0) >= 1), ValueError,
              "onnx::export: dynamic_batch needs every example input to have a batch dim of at "
              "least 1; input {} has shape {}",
              i, to_string(x.shape()));
  }
  const std::vector<std::string> input_names =
      default_names(options.input_names, example_inputs.size(), "input", "input");

  const graph::Graph g = trace_once(fn, example_inputs);
  std::optional<graph::Graph> other;
  int64_t batch_a = 0, batch_b = 0;
  if (options.dynamic_batch) {
    batch_a = example_inputs[0].size(0);
    const std::vector<Tensor> larger = one_more(example_inputs);
    batch_b = larger[0].size(0);
    try {
      other = trace_once(fn, larger);
    } catch (const Error& e) {
      ATH_THROW(NotImplementedError,
                "onnx::export (dynamic_batch): the forward fails at batch size {} (the example's "
                "is {}): {}; export with dynamic_batch = false",
                batch_b, batch_a, e.what());
    }
    detail::check_same_graph(g, *other, batch_a, batch_b);
  }
  const std::vector<std::string> output_names =
      default_names(options.output_names, g.outputs.size(), "output", "output");

  ::onnx::ModelProto model;
  model.set_ir_version(options.opset >= 15 ? 8 : 7);
  model.set_producer_name("athanor");
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(options.opset);
  ::onnx::GraphProto& out = *model.mutable_graph();
  out.set_name("athanor");

  EmitContext ctx(g, other ? &*other : nullptr, batch_a, batch_b, options, out);
  for (std::size_t i = 0; i < g.arguments.size(); ++i) ctx.set_name(g.arguments[i], input_names[i]);
  name_state(ctx, g, named_state);
  ctx.set_graph_outputs(g.outputs, output_names);
  detail::emit_graph(ctx);
  detail::finish_graph(ctx, out, input_names, output_names, batch_a);

  ExportResult result{.inputs = input_names, .outputs = output_names};
  result.nodes = out.node_size();
  result.initializers = out.initializer_size();
  for (const auto& n : out.node()) ++result.onnx_ops[n.op_type()];

  ATH_CHECK(model.ByteSizeLong() < (std::size_t{1} << 31), NotImplementedError,
            "onnx::export: the model is {} bytes; over 2 GiB needs external data, which the "
            "exporter does not write",
            model.ByteSizeLong());
  std::string bytes;
  model.SerializeToString(&bytes);
  write_file_atomic(path, std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  return result;
}

ExportResult export_model(nn::Module& module, const std::vector<Tensor>& example_inputs,
                          const std::string& path, const ExportOptions& options) {
  ATH_CHECK(example_inputs.size() == 1, ValueError,
            "onnx::export_model: {}'s forward takes one tensor, got {} example inputs (export a "
            "function of several with onnx::export_function)",
            module.type_name(), example_inputs.size());
  // Eval mode for the trace; each module's own flag back afterwards (parents first, so a
  // child's flag overrides what its parent's train() set).
  std::vector<std::pair<nn::Module*, bool>> modes;
  for (auto& [name, m] : module.named_modules()) modes.emplace_back(m, m->is_training());
  auto restore = [&] {
    for (auto& [m, training] : modes) m->train(training);
  };
  module.eval();
  nn::NamedTensors named = module.named_parameters();
  for (auto& b : module.named_buffers()) named.push_back(std::move(b));
  try {
    ExportResult r = export_function(
        [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{module(in[0])}; },
        example_inputs, named, path, options);
    restore();
    return r;
  } catch (...) {
    restore();
    throw;
  }
}

std::vector<std::string> exportable_ops() {
  std::vector<std::string> r;
  for (const auto& [op, e] : detail::emit_table()) r.push_back(op->name);
  std::sort(r.begin(), r.end());
  return r;
}

}  // namespace ath::onnx
