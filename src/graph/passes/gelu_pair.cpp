// gelu_pair (training graphs, after remat): a GELU that the backward recomputes and that GELU's
// gradient become one gelu_with_backward node (ops/activations.h):
//
//   r = gelu(x) ... dx = gelu_backward(g, x)   ->   (r, dx) = gelu_with_backward(g, x)
//
// remat recomputes a transformer MLP's GELU output for the weight gradient of the linear after
// it (W4: 4 MB a layer, not kept from the forward), and gelu_backward then reads the same x: the
// fused kernel reads x once and computes Phi(x) once for both (Phi's erf is most of either
// kernel's time). The fused node runs where the gradient was made, so the nodes between the two
// that read r (the weight gradient's view and product) move down to just after it, in their
// order. Bit-identical (the kernel computes each output as the two ops do).
//
// Legal when: both nodes are the exact GELU on the same x; g is not made from r (else r must
// come first); nothing between them writes memory (a traced step's writes come last) or is a
// random draw's; r is no graph output. Kept only where the memory plan's arena does not grow.
#include <algorithm>

#include "athanor/graph/memory_plan.h"
#include "athanor/graph/passes.h"
#include "athanor/ops/activations.h"

namespace ath::graph {

namespace {

bool exact_gelu(const Node& n, const OpDef& op) {
  return n.op == &op && !n.attr_source && n.write == WriteKind::None &&
         static_cast<const GeluAttrs*>(n.attrs.get())->approximate == GeluApprox::None;
}

// Fuses the first pair it finds whose gradient is not in `skip`; the gradient's value id as it
// was before the fusion renumbered g, or kNoValue when there is none.
ValueId fuse_one_pair(Graph& g, const std::vector<ValueId>& skip) {
  for (std::size_t b = 0; b < g.nodes.size(); ++b) {
    if (!exact_gelu(g.nodes[b], op_gelu_backward()) || g.nodes[b].inputs.size() != 2) continue;
    if (std::find(skip.begin(), skip.end(), g.nodes[b].outputs[0]) != skip.end()) continue;
    const ValueId x = g.nodes[b].inputs[1], grad = g.nodes[b].inputs[0];
    // The nearest GELU of x before it.
    std::size_t r = b;
    for (std::size_t k = b; k-- > 0;) {
      if (exact_gelu(g.nodes[k], op_gelu()) && g.nodes[k].inputs[0] == x) {
        r = k;
        break;
      }
    }
    if (r == b) continue;
    const ValueId out = g.nodes[r].outputs[0];
    if (std::find(g.outputs.begin(), g.outputs.end(), out) != g.outputs.end()) continue;
    // The nodes between r and b that depend on r (through any chain, views included): they
    // move below b.
    std::vector<bool> tainted(g.values.size(), false);
    tainted[static_cast<std::size_t>(out)] = true;
    std::vector<bool> moved(g.nodes.size(), false);
    bool legal = true;
    for (std::size_t k = r + 1; k < b && legal; ++k) {
      const Node& n = g.nodes[k];
      legal = !has_side_effects(n) && n.writes.empty();
      const bool reads = std::any_of(n.inputs.begin(), n.inputs.end(), [&](ValueId v) {
        return tainted[static_cast<std::size_t>(v)] ||
               tainted[static_cast<std::size_t>(g.storage_of(v))];
      });
      if (!reads) continue;
      moved[k] = true;
      for (ValueId o : n.outputs) tainted[static_cast<std::size_t>(o)] = true;
    }
    if (!legal || tainted[static_cast<std::size_t>(grad)] ||
        tainted[static_cast<std::size_t>(g.storage_of(grad))])
      continue;
    // b becomes the fused node (outputs: the gradient, then r's value) and the moved nodes
    // follow it, in their order; then r's node goes.
    Node& fused_node = g.nodes[b];
    fused_node.op = &op_gelu_with_backward();
    const ValueId made = fused_node.outputs[0];  // (g's id: the rewrite below renumbers)
    fused_node.outputs = {made, out};
    g.values[static_cast<std::size_t>(out)].node = static_cast<int32_t>(b);
    g.values[static_cast<std::size_t>(out)].output = 1;
    std::vector<int32_t> order;
    for (std::size_t k = 0; k < g.nodes.size(); ++k) {
      if (moved[k]) continue;
      order.push_back(static_cast<int32_t>(k));
      if (k != b) continue;
      for (std::size_t m = r + 1; m < b; ++m)
        if (moved[m]) order.push_back(static_cast<int32_t>(m));
    }
    reorder_nodes(g, order);
    std::vector<bool> keep(g.nodes.size(), true);
    keep[r] = false;  // r keeps its position: only nodes after it moved
    rewrite(g, keep, std::vector<ValueId>(g.values.size(), kNoValue));
    return made;
  }
  return kNoValue;
}

}  // namespace

// Each pair on a copy, kept where the memory plan's arena does not grow: the recomputed GELU
// and the incoming gradient are now live at once (the weight gradient's product used to free
// the GELU before the gradient was made), which may raise the peak that remat brought down.
int fuse_gelu_pairs(Graph& g) {
  int fused = 0;
  std::vector<ValueId> rejected;
  int64_t arena = -1;
  for (;;) {
    Graph h = g;
    const ValueId made = fuse_one_pair(h, rejected);
    if (made == kNoValue) break;
    if (arena < 0) arena = plan_memory(g).arena_bytes;
    const int64_t after = plan_memory(h).arena_bytes;
    if (after > arena) {
      rejected.push_back(made);  // g's id of the pair's gradient
      continue;
    }
    g = std::move(h);
    arena = after;
    rejected.clear();  // ids changed with the rewrite; re-checking a rejected pair is harmless
    ++fused;
  }
  return fused;
}

}  // namespace ath::graph
