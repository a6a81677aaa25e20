// The value of a graph value known when the graph is built: a constant, or a view chain ending
// at one (Gemm's transposed weight is a permute of its initializer). What the inference passes
// that repack weights read.
#pragma once

#include <vector>

#include "athanor/graph/graph.h"

namespace ath::graph::detail {

// The tensor, or an undefined one when v is not constant. `nodes` are the graph's nodes (a pass
// that has moved g.nodes out passes its copy).
inline Tensor constant_value(const Graph& g, const std::vector<Node>& nodes, ValueId v) {
  const Value& val = g.value(v);
  if (val.origin == ValueOrigin::Constant) return g.constants[static_cast<std::size_t>(val.index)];
  if (val.origin != ValueOrigin::Node) return {};
  const Node& n = nodes[static_cast<std::size_t>(val.node)];
  if (n.op->kind != OpKind::View || n.inputs.size() != 1 || n.write != WriteKind::None) return {};
  const Tensor in = constant_value(g, nodes, n.inputs[0]);
  if (!in.defined()) return {};
  const Tensor args[1] = {in};
  return n.op->run(TensorSpan(args), n.attrs.get())[static_cast<std::size_t>(val.output)];
}

inline Tensor constant_value(const Graph& g, ValueId v) { return constant_value(g, g.nodes, v); }

}  // namespace ath::graph::detail
