// Algebraic simplification and no-op view elimination: a node whose result is exactly an
// existing value (bit for bit, with the same layout) is dropped and its uses read that value.
//
// The rewrites, each exact in IEEE arithmetic for every input, NaNs and signed zeros included:
// - mul(x, c), mul(c, x), div(x, c) where every element of the constant c is 1;
// - neg(neg(x));
// - a chain of view ops that only re-describe their input (view, permute, expand: none moves
//   the storage offset) and ends with x's own shape and strides: transpose of a transpose, a
//   reshape chain back to the original shape.
// x + 0 and x - 0 are left alone: -0 + 0 is +0, and an add's alpha may flip the zero's sign.
//
// Legal only when nobody can tell the result from x afterwards:
// - the result has x's dtype, shape and strides (a consumer's kernel choice depends on strides);
// - for arithmetic results, nothing writes x's buffer after the node (the result held x's old
//   contents) and nothing writes the result (a write would now reach x);
// - the result is not a graph output or an assigned gradient (the caller would get x itself).
// A view already shares x's buffer, so writes through it are writes to x either way.
#include "athanor/graph/passes.h"
#include "athanor/ops/pointwise.h"
#include "athanor/ops/views.h"

namespace ath::graph {

namespace {

bool same_layout(const Value& a, const Value& b) {
  return a.meta.dtype == b.meta.dtype && a.meta.shape == b.meta.shape &&
         a.meta.device == b.meta.device && a.strides == b.strides;
}

bool all_ones(const Graph& g, ValueId v) {
  const Value& c = g.value(v);
  if (c.origin != ValueOrigin::Constant) return false;
  const Tensor& t = g.constants[static_cast<std::size_t>(c.index)];
  if (t.numel() > 64) return false;  // scalar operands; a large constant is not worth reading
  for (double e : t.to(kFloat64).to_vector<double>())
    if (e != 1.0) return false;
  return true;
}

bool is_offset_preserving_view(const OpDef* op) {
  return op == &op_view() || op == &op_permute() || op == &op_expand();
}

}  // namespace

int simplify(Graph& g) {
  // The last node that writes each buffer, and which buffers are ever written.
  std::vector<int32_t> last_write(g.values.size(), -1);  // by storage owner
  std::vector<bool> result_written(g.values.size(), false);
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    for (const auto& w : g.nodes[k].writes) {
      last_write[static_cast<std::size_t>(g.storage_of(w.first))] = static_cast<int32_t>(k);
      result_written[static_cast<std::size_t>(g.storage_of(w.first))] = true;
    }
  }
  std::vector<bool> pinned(g.values.size(), false);  // outputs and gradients keep their handle
  for (ValueId o : g.outputs) pinned[static_cast<std::size_t>(o)] = true;
  for (const GradBinding& b : g.grads) pinned[static_cast<std::size_t>(b.grad)] = true;
  auto producer = [&](ValueId v) -> const Node* {
    const Value& val = g.value(v);
    if (val.origin != ValueOrigin::Node || val.version_of != kNoValue) return nullptr;
    return &g.nodes[static_cast<std::size_t>(val.node)];
  };

  std::vector<ValueId> replace(g.values.size(), kNoValue);
  std::vector<bool> keep(g.nodes.size(), true);
  int changed = 0;
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    if (n.outputs.size() != 1 || n.write != WriteKind::None || n.attr_source || has_side_effects(n))
      continue;
    const ValueId out = n.outputs[0];
    if (pinned[static_cast<std::size_t>(out)]) continue;
    ValueId same = kNoValue;
    auto read_at = static_cast<int32_t>(k);  // the node that read `same`
    bool is_view = false;
    if ((n.op == &op_mul() || n.op == &op_div()) && n.inputs.size() == 2) {
      if (all_ones(g, n.inputs[1]))
        same = n.inputs[0];
      else if (n.op == &op_mul() && all_ones(g, n.inputs[0]))
        same = n.inputs[1];
    } else if (n.op == &op_neg() && n.inputs.size() == 1) {
      const Node* inner = producer(n.inputs[0]);
      if (inner != nullptr && inner->op == &op_neg()) {
        same = inner->inputs[0];
        read_at = g.value(n.inputs[0]).node;
      }
    } else if (is_offset_preserving_view(n.op)) {
      // Walk up the chain of re-describing views to the first ancestor with this layout.
      is_view = true;
      for (ValueId v = n.inputs[0];;) {
        if (same_layout(g.value(v), g.value(out))) {
          same = v;
          break;
        }
        const Node* up = producer(v);
        if (up == nullptr || !is_offset_preserving_view(up->op)) break;
        v = up->inputs[0];
      }
    }
    if (same == kNoValue || !same_layout(g.value(same), g.value(out))) continue;
    if (!is_view) {
      // The executor replays on real buffers: x's buffer must hold, at every later use, what
      // the node read.
      if (last_write[static_cast<std::size_t>(g.storage_of(same))] >= read_at) continue;
      if (result_written[static_cast<std::size_t>(g.storage_of(out))]) continue;
    }
    while (replace[static_cast<std::size_t>(same)] != kNoValue)
      same = replace[static_cast<std::size_t>(same)];
    replace[static_cast<std::size_t>(out)] = same;
    keep[k] = false;
    ++changed;
  }
  if (changed > 0) rewrite(g, keep, replace);
  return changed;
}

}  // namespace ath::graph
