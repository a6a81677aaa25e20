#include "emit_context.h"

#include <fmt/format.h>

#include <algorithm>

#include "../tensor_proto.h"
#include "athanor/core/error.h"
#include "athanor/ops/copy.h"
#include "athanor/ops/creation.h"

namespace ath::onnx::detail {

void attr_i(::onnx::NodeProto& n, const std::string& name, int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(v);
}

void attr_f(::onnx::NodeProto& n, const std::string& name, double v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::FLOAT);
  a->set_f(static_cast<float>(v));
}

void attr_ints(::onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

void attr_s(::onnx::NodeProto& n, const std::string& name, const std::string& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::STRING);
  a->set_s(v);
}

EmitContext::EmitContext(const graph::Graph& g, const graph::Graph* other, int64_t batch_a,
                         int64_t batch_b, const ExportOptions& options, ::onnx::GraphProto& out)
    : g_(g), other_(other), batch_a_(batch_a), batch_b_(batch_b), options_(options), out_(out) {}

void EmitContext::begin(int node) {
  node_ = node;
  sub_ = 0;
}

bool EmitContext::attrs_vary() const {
  if (other_ == nullptr) return false;
  const graph::Node& b = other_->nodes[static_cast<std::size_t>(node_)];
  return !node().op->attrs_equal(node().attrs.get(), b.attrs.get());
}

ValueId EmitContext::out_value(int i) const {
  const graph::Node& n = node();
  if (n.write == graph::WriteKind::IntoSelf) return n.writes[0].second;
  return n.outputs[static_cast<std::size_t>(i)];
}

bool EmitContext::is_absent(int i) const {
  const TensorMeta& m = in_meta(i);
  return m.shape.size() == 1 && m.shape[0] == 0;
}

bool EmitContext::out_used(int i) const {
  const auto v = static_cast<std::size_t>(out_value(i));
  return v < live_values_.size() && live_values_[v];
}

void EmitContext::set_graph_outputs(const std::vector<ValueId>& outputs,
                                    std::vector<std::string> names) {
  for (std::size_t i = 0; i < outputs.size(); ++i) output_names_.emplace(outputs[i], names[i]);
}

std::optional<Tensor> EmitContext::known(ValueId v) const {
  auto it = known_.find(v);
  if (it == known_.end()) return std::nullopt;
  return it->second;
}

std::string EmitContext::name(ValueId v) {
  if (auto it = names_.find(v); it != names_.end()) return it->second;
  const graph::Value& val = g_.value(v);
  if (auto it = known_.find(v); it != known_.end()) {
    ATH_CHECK(
        std::find(batch_dependent_.begin(), batch_dependent_.end(), v) == batch_dependent_.end(),
        NotImplementedError,
        "{} ({}): the constant %{} holds values that depend on the batch size (a "
        "number computed on the host from a tensor's shape); dynamic_batch cannot express "
        "it: export with dynamic_batch = false",
        op_label(), describe(), v);
    const Tensor& t = it->second;
    std::string n;
    if (any_varies(v)) {
      // A constant whose shape follows the batch (the zero initial state of a recurrent
      // layer): ConstantOfShape of the run-time shape, if every element is the same.
      const std::vector<double> values = t.to(kFloat64).contiguous().to_vector<double>();
      const bool uniform =
          !values.empty() &&
          std::all_of(values.begin(), values.end(), [&](double x) { return x == values.front(); });
      if (!uniform) {
        unsupported(fmt::format(
            "input %{} is a constant whose shape follows the batch size and whose elements "
            "differ, which dynamic_batch cannot express",
            v));
      }
      ::onnx::NodeProto* node = nullptr;
      n = op("ConstantOfShape", {runtime_shape(v)}, &node);
      auto* a = node->add_attribute();
      a->set_name("value");
      a->set_type(::onnx::AttributeProto::TENSOR);
      tensor_to_proto(t.flatten().slice(0, 0, 1), *a->mutable_t());
    } else {
      n = val.origin == graph::ValueOrigin::Constant
              ? constant(t, fmt::format("const_{}", val.index))
              : constant(t, fmt::format("folded_{}", v));
    }
    names_[v] = n;
    return n;
  }
  if (val.origin == graph::ValueOrigin::State) {
    if (any_varies(v)) {
      unsupported(fmt::format("state tensor %{} has a shape that follows the batch size", v));
    }
    auto it = state_names_.find(v);
    std::string n = it != state_names_.end() ? it->second : fmt::format("state_{}", val.index);
    auto* init = out_.add_initializer();
    tensor_to_proto(g_.state_tensors[static_cast<std::size_t>(val.index)], *init);
    init->set_name(n);
    names_[v] = n;
    return n;
  }
  // A result of a node that could not be emitted: the export fails after every node was tried.
  return fmt::format("unemitted_{}", v);
}

std::string EmitContext::in_as(int i, DType t) {
  if (in_meta(i).dtype == t) return in(i);
  const ValueId v = in_value(i);
  if (auto k = known(v); k && !any_varies(v)) return constant(k->to(t), "cast");
  ::onnx::NodeProto* n = nullptr;
  std::string r = op("Cast", {in(i)}, &n);
  attr_i(*n, "to", onnx_from_dtype(t));
  return r;
}

std::string EmitContext::out(int i) {
  const ValueId v = out_value(i);
  if (auto it = names_.find(v); it != names_.end()) return it->second;
  std::string n;
  if (auto it = output_names_.find(v); it != output_names_.end()) {
    n = it->second;
  } else {
    n = node().outputs.size() > 1 ? fmt::format("{}_{}_out{}", node().op->name, node_, i)
                                  : fmt::format("{}_{}", node().op->name, node_);
  }
  names_[v] = n;
  return n;
}

void EmitContext::bind_out(int i, const std::string& onnx_name) {
  names_[out_value(i)] = onnx_name;
}

bool EmitContext::varies(ValueId v, std::size_t dim) const {
  if (other_ == nullptr) return false;
  return other_->value(v).meta.shape[dim] != g_.value(v).meta.shape[dim];
}

bool EmitContext::any_varies(ValueId v) const {
  for (std::size_t d = 0; d < g_.value(v).meta.shape.size(); ++d) {
    if (varies(v, d)) return true;
  }
  return false;
}

int64_t EmitContext::batch_factor(ValueId v, std::size_t dim) const {
  const int64_t a = g_.value(v).meta.shape[dim], b = other_->value(v).meta.shape[dim];
  const int64_t k = a / batch_a_;
  if (k * batch_a_ != a || k * batch_b_ != b) {
    unsupported(fmt::format(
        "dim {} of %{} is {} at batch size {} and {} at batch size {}: not a multiple of the "
        "batch size, which dynamic_batch cannot express",
        dim, v, a, batch_a_, b, batch_b_));
  }
  return k;
}

std::string EmitContext::batch_size() {
  if (batch_size_.empty()) {
    const std::string shape = op("Shape", {name(g_.arguments[0])});
    batch_size_ = op("Gather", {shape, ints({0})});
  }
  return batch_size_;
}

std::string EmitContext::reshape_target(ValueId v) {
  const Shape& s = meta(v).shape;
  std::vector<int64_t> dims(s.begin(), s.end());
  int varying = 0;
  for (std::size_t d = 0; d < dims.size(); ++d) {
    if (varies(v, d)) {
      batch_factor(v, d);  // checks that the dim is a multiple of the batch size
      dims[d] = -1;
      ++varying;
    }
  }
  return varying <= 1 ? ints(dims) : runtime_shape(v);
}

std::string EmitContext::runtime_shape(ValueId v) {
  const Shape& s = meta(v).shape;
  if (!any_varies(v)) return ints(std::vector<int64_t>(s.begin(), s.end()));
  std::vector<std::string> pieces;
  std::vector<int64_t> fixed;
  for (std::size_t d = 0; d < s.size(); ++d) {
    if (!varies(v, d)) {
      fixed.push_back(s[d]);
      continue;
    }
    if (!fixed.empty()) pieces.push_back(ints(std::exchange(fixed, {})));
    const int64_t k = batch_factor(v, d);
    pieces.push_back(k == 1 ? batch_size() : op("Mul", {batch_size(), ints({k})}));
  }
  if (!fixed.empty()) pieces.push_back(ints(fixed));
  if (pieces.size() == 1) return pieces[0];
  ::onnx::NodeProto* n = nullptr;
  std::string r = op("Concat", pieces, &n);
  attr_i(*n, "axis", 0);
  return r;
}

::onnx::NodeProto& EmitContext::add(const std::string& op_type,
                                    const std::vector<std::string>& inputs,
                                    const std::vector<std::string>& outputs) {
  auto* n = out_.add_node();
  n->set_op_type(op_type);
  const std::string base =
      node_ < 0 ? std::string("graph_outputs") : fmt::format("{}_{}", node().op->name, node_);
  n->set_name(sub_ == 0 ? base : fmt::format("{}/{}{}", base, op_type, sub_));
  ++sub_;
  std::size_t used = inputs.size();
  while (used > 0 && inputs[used - 1].empty()) --used;  // omitted trailing optional inputs
  for (std::size_t i = 0; i < used; ++i) n->add_input(inputs[i]);
  for (const auto& o : outputs) n->add_output(o);
  return *n;
}

std::string EmitContext::op(const std::string& op_type, const std::vector<std::string>& inputs,
                            ::onnx::NodeProto** node) {
  std::string r = fresh(op_type);
  ::onnx::NodeProto& n = add(op_type, inputs, {r});
  if (node != nullptr) *node = &n;
  return r;
}

std::string EmitContext::fresh(const std::string& hint) {
  const std::string base = node_ < 0 ? fmt::format("graph_outputs/{}", hint)
                                     : fmt::format("{}_{}/{}", node().op->name, node_, hint);
  const int k = hint_counts_[base]++;
  return k == 0 ? base : fmt::format("{}{}", base, k);
}

std::string EmitContext::constant(const Tensor& t, const std::string& hint) {
  const std::string n =
      hint.starts_with("const_") || hint.starts_with("folded_") ? hint : fresh(hint);
  auto* init = out_.add_initializer();
  tensor_to_proto(t, *init);
  init->set_name(n);
  return n;
}

std::string EmitContext::ints(const std::vector<int64_t>& v) {
  return constant(from_vector(v), "ints");
}

std::string EmitContext::scalar(double v, DType t) { return constant(full({}, v, t), "scalar"); }

std::string EmitContext::op_label() const {
  return node_ < 0 ? std::string("graph outputs") : fmt::format("op '{}'", node().op->name);
}

std::string EmitContext::describe() const {
  if (node_ < 0) return "after the last node";
  const graph::Node& n = node();
  std::string outs;
  for (std::size_t i = 0; i < (n.write == graph::WriteKind::IntoSelf ? 1 : n.outputs.size()); ++i) {
    const ValueId v = out_value(static_cast<int>(i));
    outs += fmt::format("{}%{}", i == 0 ? "" : ", ", v);
  }
  std::string ins, types;
  for (std::size_t i = 0; i < n.inputs.size(); ++i)
    ins += fmt::format("{}%{}", i == 0 ? "" : ", ", n.inputs[i]);
  for (std::size_t i = 0; i < (n.write == graph::WriteKind::IntoSelf ? 1 : n.outputs.size()); ++i) {
    types += fmt::format("{}{}", i == 0 ? "" : ", ",
                         graph::type_string(meta(out_value(static_cast<int>(i)))));
  }
  return fmt::format("node {}: {} = {}({}) {}", node_, outs, n.op->name, ins, types);
}

void EmitContext::unsupported(const std::string& why) const {
  ATH_THROW(NotImplementedError, "{} ({}): {}", op_label(), describe(), why);
}

}  // namespace ath::onnx::detail
