// The graph IR: a recorded computation as registry ops over values. One traced training step
// (athanor/graph/tracer.h) is one Graph — forward, the ops the autograd engine ran for the
// backward, the optimizer's update — and the inference runtime will load ONNX models into the
// same form.
//
//   graph::Graph g;
//   graph::ValueId x = g.add_argument({{4}, kFloat32});
//   Tensor two = full({}, 2.0);
//   graph::ValueId c = g.add_constant(two);
//   graph::ValueId y = g.add_node(op_mul(), NoAttrs{}, {x, c})[0];
//   g.outputs.push_back(y);
//   assert(g.to_text().find("%2 = mul(%0, %1) f32[4]") != std::string::npos);
//
// Values are in SSA form except where the step writes memory in place: an in-place op (add_,
// an optimizer update) produces a new *version* of each tensor it writes (`Value::version_of`),
// and `Value::storage` names the buffer, which views and versions share. Passes reason about
// order through those; the executor replays the nodes in order on real buffers, so aliasing
// behaves exactly as it did when the step ran eagerly.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "athanor/ops/attr_source.h"
#include "athanor/ops/op.h"

namespace ath::graph {

using ValueId = int32_t;
inline constexpr ValueId kNoValue = -1;

// Where a value comes from.
enum class ValueOrigin : uint8_t {
  Argument,  // a tensor argument of the step (the batch): bound anew at every call
  State,     // a tensor the step reads from outside (a parameter, optimizer state, a gradient
             // buffer): bound by identity, and written in place when the step writes it
  Constant,  // a tensor only the graph holds (a scalar operand, a folded result)
  Node,      // an output of a node, or a new version made by a node's in-place write
};

struct Value {
  ValueOrigin origin = ValueOrigin::Node;
  TensorMeta meta;
  Strides strides;                // as recorded; a replay checks them for arguments and state
  int32_t node = -1;              // the node that made it (Node origin)
  int32_t output = 0;             // which output of that node (fresh outputs), or which write
  int32_t index = -1;             // the argument / state / constant slot (other origins)
  ValueId version_of = kNoValue;  // a version made by an in-place write: the value it replaced
  ValueId storage = kNoValue;     // the value that owns the buffer (itself, unless a view/version)
  std::string name;               // optional, for reading ("fc.weight", "fc.weight.grad")
};

// How a node writes memory.
enum class WriteKind : uint8_t {
  None,      // outputs are fresh tensors
  IntoSelf,  // call_inplace: the result is written into input 0 (add_, copy_, fill_)
  Inputs,    // the op writes some inputs itself (OpDef::mutates_input: optimizer updates)
};

struct Node {
  const OpDef* op = nullptr;
  std::shared_ptr<const void> attrs;
  // Non-empty for calls made through call_with_attr_source: the attributes are recomputed from
  // it at every replay (the learning rate under a scheduler).
  AttrSource attr_source;
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;  // the op's fresh outputs (empty for IntoSelf)
  WriteKind write = WriteKind::None;
  // For each written input: {the input's value, its new version}. IntoSelf: one entry, input 0.
  std::vector<std::pair<ValueId, ValueId>> writes;
};

// A state tensor whose `.grad` the step leaves holding a value of the graph (the autograd
// engine assigns a fresh gradient to a parameter without calling an op): a replay assigns it.
struct GradBinding {
  int32_t state = -1;  // state slot of the parameter
  ValueId grad = kNoValue;
};

class Graph {
 public:
  std::vector<Value> values;
  std::vector<Node> nodes;
  std::vector<ValueId> arguments;     // argument i's value
  std::vector<ValueId> state;         // state slot i's value (the version the graph first reads)
  std::vector<Tensor> state_tensors;  // bound state, slot by slot
  // Per state slot: the slot of the parameter whose `.grad` it is, or -1. Such a slot is bound
  // by role, not identity: each replay reads the parameter's current gradient (a new tensor
  // every accumulation window, when zero_grad sets gradients to none).
  std::vector<int32_t> state_grad_of;
  std::vector<Tensor> constants;  // constant slot i's tensor
  std::vector<ValueId> outputs;   // what the step returns
  std::vector<GradBinding> grads;

  ValueId add_argument(const TensorMeta& meta, Strides strides = {});  // {}: contiguous
  ValueId add_state(const Tensor& t, std::string name = {});
  ValueId add_constant(const Tensor& t);
  // Appends a node with fresh outputs whose metadata comes from the op's shape rule over the
  // inputs' metadata (no kernel runs); returns the output values.
  template <class A>
  std::vector<ValueId> add_node(const Op<A>& op, const A& attrs, std::vector<ValueId> inputs) {
    return add_node_erased(op, op.clone_attrs(&attrs), std::move(inputs));
  }
  std::vector<ValueId> add_node_erased(const OpDef& op, std::shared_ptr<const void> attrs,
                                       std::vector<ValueId> inputs);
  // Adds a value made by node `node` (metadata given), returning its id.
  ValueId add_value(Value v);

  // The value whose buffer v uses (follows views and versions).
  ValueId storage_of(ValueId v) const { return values[static_cast<std::size_t>(v)].storage; }
  const Value& value(ValueId v) const { return values[static_cast<std::size_t>(v)]; }

  // One line per node: `%12 = add(%3, %11) f32[64,128]`; in-place writes as
  // `%7 = add_(%4, %6) f32[3]` with `%7 = new version of %4`; inputs and outputs first and last.
  std::string to_text() const;
  // Node k's line of to_text(), without the indent.
  std::string node_text(int32_t k) const;
  // Graphviz: nodes as boxes, values as edges labelled with their type.
  std::string to_dot() const;

  // Node counts by op name, for tests and reports.
  int count(std::string_view op_name) const;
};

// "f32[64,128]" (strides appended when not contiguous: "f32[4,3]{1,4}").
std::string type_string(const TensorMeta& meta, const Strides& strides = {});

}  // namespace ath::graph
