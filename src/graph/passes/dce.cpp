// Dead-code elimination: a backward sweep from what the step hands back (outputs, gradients)
// and from every node with side effects.
#include "athanor/graph/passes.h"

namespace ath::graph {

int eliminate_dead_code(Graph& g) {
  std::vector<bool> needed(g.values.size(), false);
  for (ValueId o : g.outputs) needed[static_cast<std::size_t>(o)] = true;
  for (const GradBinding& b : g.grads) needed[static_cast<std::size_t>(b.grad)] = true;
  std::vector<bool> keep(g.nodes.size(), false);
  int removed = 0;
  for (std::size_t k = g.nodes.size(); k-- > 0;) {
    const Node& n = g.nodes[k];
    bool live = has_side_effects(n);
    for (ValueId o : n.outputs) live = live || needed[static_cast<std::size_t>(o)];
    if (!live) {
      ++removed;
      continue;
    }
    keep[k] = true;
    for (ValueId in : n.inputs) needed[static_cast<std::size_t>(in)] = true;
  }
  if (removed > 0) rewrite(g, keep, std::vector<ValueId>(g.values.size(), kNoValue));
  return removed;
}

}  // namespace ath::graph
