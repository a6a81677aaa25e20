#include "athanor/graph/graph.h"

#include <fmt/format.h>

#include <algorithm>

#include "athanor/ops/fused_pointwise.h"

namespace ath::graph {

namespace {

const char* short_dtype(DType t) {
  switch (t) {
    case kFloat32:
      return "f32";
    case kFloat64:
      return "f64";
    case kBFloat16:
      return "bf16";
    case kFloat16:
      return "f16";
    case kInt64:
      return "i64";
    case kInt32:
      return "i32";
    case kUInt8:
      return "u8";
    case kBool:
      return "bool";
  }
  return "?";
}

std::string join_ids(const std::vector<ValueId>& ids) {
  std::string s;
  for (std::size_t i = 0; i < ids.size(); ++i) s += fmt::format("{}%{}", i ? ", " : "", ids[i]);
  return s;
}

std::string origin_label(const Value& v) {
  switch (v.origin) {
    case ValueOrigin::Argument:
      return fmt::format("arg{}", v.index);
    case ValueOrigin::State:
      return fmt::format("state{}", v.index);
    case ValueOrigin::Constant:
      return fmt::format("const{}", v.index);
    case ValueOrigin::Node:
      break;
  }
  return "";
}

}  // namespace

std::string type_string(const TensorMeta& meta, const Strides& strides) {
  std::string s = fmt::format("{}[", short_dtype(meta.dtype));
  for (std::size_t i = 0; i < meta.shape.size(); ++i)
    s += fmt::format("{}{}", i ? "," : "", meta.shape[i]);
  s += "]";
  if (!strides.empty() && strides != contiguous_strides(meta.shape)) {
    s += "{";
    for (std::size_t i = 0; i < strides.size(); ++i)
      s += fmt::format("{}{}", i ? "," : "", strides[i]);
    s += "}";
  }
  return s;
}

ValueId Graph::add_value(Value v) {
  const auto id = static_cast<ValueId>(values.size());
  if (v.storage == kNoValue) v.storage = id;
  values.push_back(std::move(v));
  return id;
}

ValueId Graph::add_argument(const TensorMeta& meta, Strides strides) {
  if (strides.empty()) strides = contiguous_strides(meta.shape);
  Value v{.origin = ValueOrigin::Argument, .meta = meta, .strides = std::move(strides)};
  v.index = static_cast<int32_t>(arguments.size());
  const ValueId id = add_value(std::move(v));
  arguments.push_back(id);
  return id;
}

ValueId Graph::add_state(const Tensor& t, std::string name) {
  Value v{.origin = ValueOrigin::State,
          .meta = {t.shape(), t.dtype(), t.device()},
          .strides = t.strides()};
  v.index = static_cast<int32_t>(state.size());
  v.name = std::move(name);
  const ValueId id = add_value(std::move(v));
  state.push_back(id);
  state_tensors.push_back(t);
  state_grad_of.push_back(-1);
  return id;
}

ValueId Graph::add_constant(const Tensor& t) {
  Value v{.origin = ValueOrigin::Constant,
          .meta = {t.shape(), t.dtype(), t.device()},
          .strides = t.strides()};
  v.index = static_cast<int32_t>(constants.size());
  const ValueId id = add_value(std::move(v));
  constants.push_back(t);
  return id;
}

std::vector<ValueId> Graph::add_node_erased(const OpDef& op, std::shared_ptr<const void> attrs,
                                            std::vector<ValueId> inputs) {
  // The shape rule runs on empty stand-ins with the inputs' metadata: no data is read.
  std::vector<Tensor> stand_ins;
  for (ValueId i : inputs) {
    const Value& v = value(i);
    stand_ins.push_back(empty(v.meta.shape, v.meta.dtype, v.meta.device));
  }
  const OutputSpec spec = op.infer(TensorSpan(stand_ins), attrs.get());
  // A view's strides follow from its input's: build it on a stand-in with the input's layout.
  std::vector<Strides> view_strides;
  if (op.kind == OpKind::View && !inputs.empty()) {
    const Value& in = value(inputs[0]);
    int64_t extent = 1;
    for (std::size_t d = 0; d < in.meta.shape.size(); ++d) {
      if (in.meta.shape[d] == 0) extent = 0;
      if (extent > 0) extent += (in.meta.shape[d] - 1) * in.strides[d];
    }
    const Tensor base = empty({std::max<int64_t>(extent, 1)}, in.meta.dtype, in.meta.device);
    stand_ins[0] = base.as_strided(in.meta.shape, in.strides);
    for (const Tensor& t : op.run(TensorSpan(stand_ins), attrs.get()))
      view_strides.push_back(t.strides());
  }
  const auto node_index = static_cast<int32_t>(nodes.size());
  Node n{.op = &op, .attrs = std::move(attrs), .inputs = std::move(inputs)};
  for (std::size_t i = 0; i < spec.outputs.size(); ++i) {
    Value v{.meta = spec.outputs[i],
            .strides = i < view_strides.size() ? view_strides[i]
                                               : contiguous_strides(spec.outputs[i].shape)};
    v.node = node_index;
    v.output = static_cast<int32_t>(i);
    if (op.kind == OpKind::View) v.storage = storage_of(n.inputs[0]);
    n.outputs.push_back(add_value(std::move(v)));
  }
  nodes.push_back(std::move(n));
  return nodes.back().outputs;
}

std::string Graph::node_text(int32_t k) const {
  const Node& n = nodes.at(static_cast<std::size_t>(k));
  std::vector<ValueId> defined = n.outputs;
  for (const auto& w : n.writes) defined.push_back(w.second);
  std::string s;
  if (!defined.empty()) s += join_ids(defined) + " = ";
  s += fmt::format("{}{}({})", n.op->name, n.write == WriteKind::IntoSelf ? "_" : "",
                   join_ids(n.inputs));
  std::string types;
  for (ValueId d : defined) {
    types += fmt::format("{}{}", types.empty() ? " " : ", ",
                         type_string(value(d).meta, value(d).strides));
  }
  s += types;
  if (n.write == WriteKind::Inputs) {
    s += " writes";
    for (const auto& [from, to] : n.writes) s += fmt::format(" %{}->%{}", from, to);
  }
  if (n.attr_source) s += " [attrs read at replay]";
  if (n.op == &op_fused_pointwise()) {
    const auto* attrs = static_cast<const FusedPointwiseAttrs*>(n.attrs.get());
    s += " {" + PointwiseProgram::decode(attrs->code).to_string() + "}";
  }
  return s;
}

std::string Graph::to_text() const {
  std::string s = "graph(";
  bool first = true;
  for (const Value& v : values) {
    if (v.origin == ValueOrigin::Node) continue;
    const auto id = static_cast<ValueId>(&v - values.data());
    s += fmt::format("{}%{}: {} {}", first ? "" : ", ", id, type_string(v.meta, v.strides),
                     origin_label(v));
    if (!v.name.empty()) s += fmt::format(" \"{}\"", v.name);
    first = false;
  }
  s += ")\n";
  for (std::size_t k = 0; k < nodes.size(); ++k)
    s += "  " + node_text(static_cast<int32_t>(k)) + "\n";
  s += "  return (" + join_ids(outputs) + ")\n";
  for (const GradBinding& g : grads) s += fmt::format("  grad state{} = %{}\n", g.state, g.grad);
  return s;
}

std::string Graph::to_dot() const {
  std::string s = "digraph step {\n  rankdir=TB;\n  node [shape=box, fontname=monospace];\n";
  for (const Value& v : values) {
    if (v.origin == ValueOrigin::Node) continue;
    const auto id = static_cast<ValueId>(&v - values.data());
    s += fmt::format("  v{} [shape=ellipse, label=\"{}\\n{}\"];\n", id,
                     v.name.empty() ? origin_label(v) : v.name, type_string(v.meta));
  }
  // Where each value comes from: an input's ellipse or the node that defines it.
  std::vector<std::string> source(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) source[i] = fmt::format("v{}", i);
  for (std::size_t k = 0; k < nodes.size(); ++k) {
    const Node& n = nodes[k];
    s += fmt::format("  n{} [label=\"{}{}\"];\n", k, n.op->name,
                     n.write == WriteKind::IntoSelf ? "_" : "");
    for (ValueId in : n.inputs) {
      s += fmt::format("  {} -> n{} [label=\"{}\"];\n", source[static_cast<std::size_t>(in)], k,
                       type_string(value(in).meta));
    }
    for (ValueId out : n.outputs) source[static_cast<std::size_t>(out)] = fmt::format("n{}", k);
    for (const auto& w : n.writes)
      source[static_cast<std::size_t>(w.second)] = fmt::format("n{}", k);
  }
  s += "  out [shape=ellipse, label=\"return\"];\n";
  for (ValueId o : outputs) s += fmt::format("  {} -> out;\n", source[static_cast<std::size_t>(o)]);
  s += "}\n";
  return s;
}

int Graph::count(std::string_view op_name) const {
  return static_cast<int>(std::count_if(nodes.begin(), nodes.end(),
                                        [&](const Node& n) { return n.op->name == op_name; }));
}

}  // namespace ath::graph
