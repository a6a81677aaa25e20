#include "export_graph.h"

#include <fmt/format.h>

#include <unordered_set>

#include "../tensor_proto.h"
#include "athanor/core/error.h"
#include "athanor/ops/comparison.h"
#include "athanor/tensor/grad_mode.h"
#include "emitters.h"

namespace ath::onnx::detail {

namespace {

using graph::kNoValue;

// Folded results larger than this stay computations (an expand of a constant, say).
constexpr int64_t kMaxFoldElements = int64_t{1} << 22;

ValueId version_root(const graph::Graph& g, ValueId v) {
  while (g.value(v).version_of != kNoValue) v = g.value(v).version_of;
  return v;
}

// Values the outputs depend on; a node is live when one of its results or writes is.
std::vector<bool> live_values(const graph::Graph& g) {
  std::vector<bool> live(g.values.size(), false);
  for (ValueId v : g.outputs) live[static_cast<std::size_t>(v)] = true;
  for (std::size_t k = g.nodes.size(); k-- > 0;) {
    const graph::Node& n = g.nodes[k];
    bool used = false;
    for (ValueId v : n.outputs) used = used || live[static_cast<std::size_t>(v)];
    for (const auto& w : n.writes) used = used || live[static_cast<std::size_t>(w.second)];
    if (!used) continue;
    for (ValueId v : n.inputs) live[static_cast<std::size_t>(v)] = true;
  }
  return live;
}

bool node_live(const graph::Node& n, const std::vector<bool>& live) {
  for (ValueId v : n.outputs) {
    if (live[static_cast<std::size_t>(v)]) return true;
  }
  for (const auto& w : n.writes) {
    if (live[static_cast<std::size_t>(w.second)]) return true;
  }
  return false;
}

// An in-place write is a plain function of its inputs in ONNX only when no view of the written
// buffer is read afterwards (eagerly the view sees the write; in ONNX it would not).
std::string inplace_problem(const graph::Graph& g, std::size_t k, const std::vector<bool>& live) {
  const ValueId root = version_root(g, g.nodes[k].writes[0].first);
  if (g.storage_of(root) != root) return "an in-place write into a view of another tensor";
  for (std::size_t j = k + 1; j < g.nodes.size(); ++j) {
    if (!node_live(g.nodes[j], live)) continue;
    for (ValueId u : g.nodes[j].inputs) {
      if (g.storage_of(u) == root && version_root(g, u) != root)
        return fmt::format(
            "an in-place write into a tensor whose view %{} is read afterwards (node {})", u, j);
    }
  }
  return {};
}

// Runs a node on constants now, when its inputs are all known: creation ops (arange), shapes of
// constants, a causal mask built with tril.
bool try_fold(EmitContext& ctx, const graph::Node& n) {
  if (n.op->name == "philox_seed_offset" || n.write == graph::WriteKind::Inputs ||
      ctx.attrs_vary() || n.attr_source)
    return false;
  std::vector<Tensor> ins;
  for (ValueId v : n.inputs) {
    std::optional<Tensor> t = ctx.known(v);
    if (!t) return false;
    ins.push_back(*t);
  }
  for (ValueId v : n.outputs) {
    if (numel(ctx.meta(v).shape) > kMaxFoldElements) return false;
  }
  NoGradGuard no_grad;
  if (n.write == graph::WriteKind::IntoSelf) {
    Tensor self = ins[0].clone();
    ins[0] = self;
    n.op->run_inplace(self, TensorSpan(ins), n.attrs.get());
    ctx.set_known(n.writes[0].second, self);
    return true;
  }
  Outputs out = n.op->run(TensorSpan(ins), n.attrs.get());
  for (std::size_t i = 0; i < n.outputs.size(); ++i) ctx.set_known(n.outputs[i], out[i]);
  return true;
}

}  // namespace

void check_same_graph(const graph::Graph& a, const graph::Graph& b, int64_t batch_a,
                      int64_t batch_b) {
  auto differs = [&](const std::string& what) {
    ATH_THROW(NotImplementedError,
              "onnx::export (dynamic_batch): the forward records a different computation at "
              "batch size {} than at batch size {} ({}), so its graph depends on the batch "
              "size; export with dynamic_batch = false",
              batch_b, batch_a, what);
  };
  const std::size_t nodes = std::min(a.nodes.size(), b.nodes.size());
  for (std::size_t k = 0; k < nodes; ++k) {
    const graph::Node& x = a.nodes[k];
    const graph::Node& y = b.nodes[k];
    if (x.op != y.op || x.inputs != y.inputs || x.outputs != y.outputs || x.writes != y.writes)
      differs(fmt::format("node {} is {} at one and {} at the other", k, x.op->name, y.op->name));
  }
  if (a.nodes.size() != b.nodes.size())
    differs(fmt::format("{} vs {} ops", a.nodes.size(), b.nodes.size()));
  if (a.values.size() != b.values.size() || a.outputs != b.outputs ||
      a.state.size() != b.state.size() || a.constants.size() != b.constants.size())
    differs("different values, state or outputs");
  for (std::size_t v = 0; v < a.values.size(); ++v) {
    const graph::Value& x = a.values[v];
    const graph::Value& y = b.values[v];
    if (x.origin != y.origin || x.meta.dtype != y.meta.dtype ||
        x.meta.shape.size() != y.meta.shape.size())
      differs(fmt::format("value %{} is {} at one and {} at the other", v,
                          graph::type_string(x.meta), graph::type_string(y.meta)));
  }
  for (std::size_t s = 0; s < a.state.size(); ++s) {
    if (a.state_tensors[s].impl() != b.state_tensors[s].impl())
      differs(fmt::format("state slot {} is another tensor", s));
  }
}

void emit_graph(EmitContext& ctx) {
  const graph::Graph& g = ctx.graph();
  const graph::Graph* other = ctx.other_graph();
  for (std::size_t v = 0; v < g.values.size(); ++v) {
    const graph::Value& val = g.values[v];
    if (val.origin != graph::ValueOrigin::Constant) continue;
    const Tensor& t = g.constants[static_cast<std::size_t>(val.index)];
    ctx.set_known(static_cast<ValueId>(v), t);
    if (other == nullptr) continue;
    const Tensor& u = other->constants[static_cast<std::size_t>(val.index)];
    if (u.shape() == t.shape() && !equal(u, t)) ctx.set_batch_dependent(static_cast<ValueId>(v));
  }
  const std::vector<bool> live = live_values(g);
  ctx.set_live(live);
  const EmitTable& table = emit_table();
  std::vector<std::string> failures;
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    const graph::Node& n = g.nodes[k];
    if (!node_live(n, live)) continue;
    ctx.begin(static_cast<int>(k));
    if (try_fold(ctx, n)) continue;
    auto it = table.find(n.op);
    std::string why;
    if (it == table.end()) {
      why = "no ONNX form in the exporter's op table";
    } else if (n.write == graph::WriteKind::Inputs) {
      why = "writes its inputs in place";
    } else if (n.write == graph::WriteKind::IntoSelf) {
      why = inplace_problem(g, k, live);
    }
    if (why.empty() && ctx.attrs_vary() && !it->second.batch_attrs)
      why = "its attributes depend on the batch size (dynamic_batch)";
    if (!why.empty()) {
      failures.push_back(fmt::format("{} ({}): {}", ctx.op_label(), ctx.describe(), why));
      continue;
    }
    try {
      it->second.fn(ctx);
    } catch (const NotImplementedError& e) {
      failures.push_back(e.what());
    }
  }
  if (!failures.empty()) {
    std::string list;
    for (const auto& f : failures) list += "\n  " + f;
    ATH_THROW(NotImplementedError, "onnx::export: {} node(s) cannot be written as ONNX:{}",
              failures.size(), list);
  }
}

void finish_graph(EmitContext& ctx, ::onnx::GraphProto& out,
                  const std::vector<std::string>& input_names,
                  const std::vector<std::string>& output_names, int64_t batch_a) {
  const graph::Graph& g = ctx.graph();
  ctx.begin(-1);
  auto declare = [&](::onnx::ValueInfoProto* info, const std::string& name, ValueId v) {
    info->set_name(name);
    auto* tt = info->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx_from_dtype(ctx.meta(v).dtype));
    auto* shape = tt->mutable_shape();
    const Shape& s = ctx.meta(v).shape;
    for (std::size_t d = 0; d < s.size(); ++d) {
      auto* dim = shape->add_dim();
      if (!ctx.varies(v, d)) {
        dim->set_dim_value(s[d]);
      } else if (s[d] == batch_a) {
        dim->set_dim_param("batch");
      } else {
        dim->set_dim_param(fmt::format("batch*{}", s[d] / batch_a));
      }
    }
  };
  for (std::size_t i = 0; i < g.arguments.size(); ++i)
    declare(out.add_input(), input_names[i], g.arguments[i]);
  for (std::size_t j = 0; j < g.outputs.size(); ++j) {
    const std::string name = ctx.name(g.outputs[j]);
    if (name != output_names[j]) ctx.add("Identity", {name}, {output_names[j]});
    declare(out.add_output(), output_names[j], g.outputs[j]);
  }

  // Prune what no output reads (a fused LSTM's projection, unused optional results).
  std::unordered_set<std::string> needed(output_names.begin(), output_names.end());
  std::vector<bool> keep(static_cast<std::size_t>(out.node_size()), false);
  for (int i = out.node_size(); i-- > 0;) {
    const ::onnx::NodeProto& n = out.node(i);
    bool used = false;
    for (const auto& o : n.output()) used = used || needed.count(o) != 0;
    if (!used) continue;
    keep[static_cast<std::size_t>(i)] = true;
    for (const auto& in : n.input()) needed.insert(in);
  }
  std::vector<::onnx::NodeProto> nodes;
  for (int i = 0; i < out.node_size(); ++i) {
    if (keep[static_cast<std::size_t>(i)]) nodes.push_back(std::move(*out.mutable_node(i)));
  }
  out.clear_node();
  for (auto& n : nodes) *out.add_node() = std::move(n);
  std::vector<::onnx::TensorProto> inits;
  for (int i = 0; i < out.initializer_size(); ++i) {
    if (needed.count(out.initializer(i).name()))
      inits.push_back(std::move(*out.mutable_initializer(i)));
  }
  out.clear_initializer();
  for (auto& t : inits) *out.add_initializer() = std::move(t);

  // Every value a node reads is defined before it: an emitter that forgot to name an output
  // would otherwise write a model that fails to load.
  std::unordered_set<std::string> defined(input_names.begin(), input_names.end());
  for (const auto& t : out.initializer()) defined.insert(t.name());
  for (const auto& n : out.node()) {
    for (const auto& in : n.input()) {
      ATH_CHECK(in.empty() || defined.count(in), NotImplementedError,
                "onnx::export: node '{}' reads '{}', which nothing defines (an op the exporter "
                "did not write)",
                n.name(), in);
    }
    for (const auto& o : n.output()) defined.insert(o);
  }
}

}  // namespace ath::onnx::detail
