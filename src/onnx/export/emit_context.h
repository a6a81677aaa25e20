// The exporter's working state: the recorded graph (and, with dynamic_batch, the same forward
// traced at another batch size), the ONNX graph being built, and the names that link the two.
// An emitter (emitters.h) sees one recorded node through it: its inputs as ONNX names, its
// attributes, which dims change with the batch size, and helpers that add ONNX nodes and
// constants.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "athanor/graph/graph.h"
#include "athanor/onnx/export.h"
#include "onnx/onnx_pb.h"

namespace ath::onnx::detail {

using graph::ValueId;

// ONNX attribute setters.
void attr_i(::onnx::NodeProto& n, const std::string& name, int64_t v);
void attr_f(::onnx::NodeProto& n, const std::string& name, double v);
void attr_ints(::onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v);
void attr_s(::onnx::NodeProto& n, const std::string& name, const std::string& v);

class EmitContext {
 public:
  // `other` is the graph traced at batch size batch_b (null without dynamic_batch); it has the
  // same nodes and values as `g` (checked before).
  EmitContext(const graph::Graph& g, const graph::Graph* other, int64_t batch_a, int64_t batch_b,
              const ExportOptions& options, ::onnx::GraphProto& out);

  // ---- the node being emitted -----------------------------------------------------------
  void begin(int node);  // -1: the graph outputs, after the last node
  const graph::Graph& graph() const { return g_; }
  const graph::Graph* other_graph() const { return other_; }
  const graph::Node& node() const { return g_.nodes[static_cast<std::size_t>(node_)]; }
  int node_index() const { return node_; }
  template <class A>
  const A& attrs() const {
    return *static_cast<const A*>(node().attrs.get());
  }
  // The node's attributes in the other trace (differ from attrs() only where they depend on
  // the batch size); attrs() without dynamic_batch.
  template <class A>
  const A& other_attrs() const {
    const graph::Graph& o = other_ != nullptr ? *other_ : g_;
    return *static_cast<const A*>(o.nodes[static_cast<std::size_t>(node_)].attrs.get());
  }
  bool attrs_vary() const;
  int num_inputs() const { return static_cast<int>(node().inputs.size()); }
  ValueId in_value(int i) const { return node().inputs[static_cast<std::size_t>(i)]; }
  // Output i: a fresh output, or for an in-place write (add_) the version it makes.
  ValueId out_value(int i) const;
  const TensorMeta& meta(ValueId v) const { return g_.value(v).meta; }
  const TensorMeta& in_meta(int i) const { return meta(in_value(i)); }
  const TensorMeta& out_meta(int i) const { return meta(out_value(i)); }
  // The [0] placeholder of an absent optional input (batch_norm without weight).
  bool is_absent(int i) const;
  // Whether a live node or the graph's outputs read output i.
  bool out_used(int i) const;

  // ONNX name of value v (input i): an initializer is added on first use of a parameter or
  // constant. in_as converts to dtype t (a Cast node, or a converted constant).
  std::string name(ValueId v);
  std::string in(int i) { return name(in_value(i)); }
  std::string in_as(int i, DType t);
  // The value of v when the export knows it (a constant or a folded result; not a parameter).
  std::optional<Tensor> known(ValueId v) const;
  std::optional<Tensor> known_in(int i) const { return known(in_value(i)); }
  // ONNX name for output i of the node.
  std::string out(int i);
  // Records that output i of the node is ONNX value `onnx_name` (an emitter that ends in a
  // node whose output it already named, e.g. the last of several).
  void bind_out(int i, const std::string& onnx_name);

  // ---- dims that follow the batch size ----------------------------------------------------
  bool varies(ValueId v, std::size_t dim) const;
  bool any_varies(ValueId v) const;
  // v's shape as an int64 [rank] ONNX tensor for Reshape: fixed dims literal, one batch dim -1
  // (several: computed at run time).
  std::string reshape_target(ValueId v);
  // v's exact shape at run time (Expand, ConstantOfShape): literal unless a dim follows the
  // batch, then computed from the first input's dim 0.
  std::string runtime_shape(ValueId v);

  // ---- building -------------------------------------------------------------------------
  // Adds a node; returns it (its name is derived from the recorded node).
  ::onnx::NodeProto& add(const std::string& op_type, const std::vector<std::string>& inputs,
                         const std::vector<std::string>& outputs);
  // Adds a node with one fresh output and returns the output's name.
  std::string op(const std::string& op_type, const std::vector<std::string>& inputs,
                 ::onnx::NodeProto** node = nullptr);
  std::string fresh(const std::string& hint);
  // An initializer holding t (a copy), named from the hint.
  std::string constant(const Tensor& t, const std::string& hint = "c");
  std::string ints(const std::vector<int64_t>& v);  // int64 [n]
  std::string scalar(double v, DType t);            // 0-d of dtype t
  // Throws NotImplementedError naming the node.
  [[noreturn]] void unsupported(const std::string& why) const;
  std::string describe() const;  // "node 7: %9 = topk(%8) f32[4,2]"
  std::string op_label() const;  // "op 'topk'"

  int opset() const { return options_.opset; }
  const ExportOptions& options() const { return options_; }
  // Called by the driver.
  void set_known(ValueId v, Tensor t) { known_[v] = std::move(t); }
  // A constant whose values differ between the two traces: reading it fails the export.
  void set_batch_dependent(ValueId v) { batch_dependent_.push_back(v); }
  void set_state_name(ValueId v, std::string name) { state_names_[v] = std::move(name); }
  void set_name(ValueId v, std::string name) { names_[v] = std::move(name); }
  void set_live(std::vector<bool> live_values) { live_values_ = std::move(live_values); }
  void set_graph_outputs(const std::vector<ValueId>& outputs, std::vector<std::string> names);

 private:
  std::string batch_size();  // int64 [1]: the first input's dim 0, at run time
  int64_t batch_factor(ValueId v, std::size_t dim) const;

  const graph::Graph& g_;
  const graph::Graph* other_;
  int64_t batch_a_, batch_b_;
  const ExportOptions& options_;
  ::onnx::GraphProto& out_;
  std::unordered_map<ValueId, std::string> names_;  // values with an ONNX name so far
  std::unordered_map<ValueId, std::string> output_names_;
  std::unordered_map<ValueId, Tensor> known_;
  std::unordered_map<ValueId, std::string> state_names_;
  std::vector<ValueId> batch_dependent_;
  std::vector<bool> live_values_;
  std::map<std::string, int> hint_counts_;
  std::string batch_size_;
  int node_ = -1;
  int sub_ = 0;
};

}  // namespace ath::onnx::detail
