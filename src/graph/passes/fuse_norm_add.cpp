// Norm-add fusion: in a pre-norm residual block's backward the gradient through a layer_norm
// meets the gradient through the skip connection in an add,
//
//   dx, dw, db = layer_norm_backward(g, x, mean, rstd, w)
//   s          = add(r, dx)            (or add(dx, r); alpha 1)
//
// which becomes one layer_norm_backward_add(g, x, mean, rstd, w, r) -> (s, dw, db) at the
// backward's place: dx is never written to memory and read back (ops/nn_functional.h). IEEE
// addition is commutative, so either operand order gives the add's bits.
//
// Legal when: dx is read by the add alone (and is no output, gradient or write target); the
// add is a plain same-shape, same-dtype alpha-1 add; r is defined before the backward node (the
// fused node runs there); nothing writes r's buffer between the backward and the add.
#include "athanor/graph/passes.h"
#include "athanor/ops/nn_functional.h"
#include "athanor/ops/pointwise.h"
#include "buffer_uses.h"

namespace ath::graph {

namespace {

// Position of the node that defines v (-1: an argument, state or constant, defined before all).
int64_t defined_at(const Graph& g, ValueId v) {
  const Value& val = g.value(v);
  return val.origin == ValueOrigin::Node ? val.node : -1;
}

}  // namespace

int fuse_norm_adds(Graph& g) {
  const detail::BufferUses uses = detail::buffer_uses(g);
  std::vector<bool> keep(g.nodes.size(), true);
  std::vector<ValueId> replace(g.values.size(), kNoValue);
  int fused = 0;
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    Node& norm = g.nodes[k];
    if (norm.op != &op_layer_norm_backward() || norm.outputs.size() != 3 || norm.attr_source)
      continue;
    const ValueId dx = norm.outputs[0];
    if (g.storage_of(dx) != dx || !uses.private_to_one_reader(g, dx)) continue;
    const auto add_index = static_cast<std::size_t>(uses.readers[static_cast<std::size_t>(dx)][0]);
    Node& add = g.nodes[add_index];
    if (add.op != &op_add() || add.write != WriteKind::None || add.inputs.size() != 2) continue;
    if (static_cast<const AlphaAttrs*>(add.attrs.get())->alpha.to_double() != 1.0) continue;
    const ValueId residual = add.inputs[0] == dx ? add.inputs[1] : add.inputs[0];
    if (residual == dx) continue;  // add(dx, dx)
    const Value &dv = g.value(dx), &rv = g.value(residual), &sv = g.value(add.outputs[0]);
    if (rv.meta.shape != dv.meta.shape || rv.meta.dtype != dv.meta.dtype ||
        sv.meta.shape != dv.meta.shape || sv.meta.dtype != dv.meta.dtype)
      continue;
    if (defined_at(g, residual) >= static_cast<int64_t>(k)) continue;
    bool written = false;
    for (std::size_t j = k + 1; j < add_index && !written; ++j) {
      for (const auto& w : g.nodes[j].writes)
        written |= g.storage_of(w.first) == g.storage_of(residual);
    }
    if (written) continue;
    // The fused node takes the add's result as its first output; the add goes.
    const ValueId sum = add.outputs[0];
    norm.op = &op_layer_norm_backward_add();
    norm.inputs.push_back(residual);
    norm.outputs[0] = sum;
    g.values[static_cast<std::size_t>(sum)].node = static_cast<int32_t>(k);
    g.values[static_cast<std::size_t>(sum)].output = 0;
    keep[add_index] = false;
    ++fused;
  }
  if (fused > 0) rewrite(g, keep, replace);
  return fused;
}

}  // namespace ath::graph
