// Constant folding: a node whose inputs are all constants computes the same thing at every
// replay, so it runs once here and its results become constants. Limited to small results
// (1 MiB in all): a folded tensor stays in memory for the graph's life, where the node's result
// would be freed after its last use.
#include "athanor/graph/passes.h"
#include "athanor/ops/dispatch.h"
#include "athanor/tensor/grad_mode.h"

namespace ath::graph {

namespace {
constexpr std::size_t kMaxFoldedBytes = std::size_t{1} << 20;
}

int fold_constants(Graph& g) {
  std::vector<bool> written(g.values.size(), false);
  for (const Node& n : g.nodes)
    for (const auto& w : n.writes) written[static_cast<std::size_t>(g.storage_of(w.first))] = true;

  NoGradGuard no_grad;
  detail::AutocastPause no_autocast;
  std::vector<ValueId> replace(g.values.size(), kNoValue);
  std::vector<bool> keep(g.nodes.size(), true);
  int folded = 0;
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    if (has_side_effects(n) || n.attr_source || n.op->kind == OpKind::View) continue;
    bool foldable = true;
    std::size_t bytes = 0;
    std::vector<Tensor> inputs;
    for (ValueId in : n.inputs) {
      ValueId v = replace[static_cast<std::size_t>(in)] != kNoValue
                      ? replace[static_cast<std::size_t>(in)]
                      : in;
      const Value& val = g.value(v);
      if (val.origin != ValueOrigin::Constant || written[static_cast<std::size_t>(val.storage)]) {
        foldable = false;
        break;
      }
      inputs.push_back(g.constants[static_cast<std::size_t>(val.index)]);
    }
    for (ValueId o : n.outputs) {
      const Value& v = g.value(o);
      bytes += static_cast<std::size_t>(numel(v.meta.shape)) * element_size(v.meta.dtype);
      foldable = foldable && !written[static_cast<std::size_t>(v.storage)];
    }
    if (!foldable || bytes > kMaxFoldedBytes || n.outputs.empty()) continue;
    Outputs out = n.op->run(TensorSpan(inputs), n.attrs.get());
    for (std::size_t i = 0; i < n.outputs.size(); ++i)
      replace[static_cast<std::size_t>(n.outputs[i])] = g.add_constant(out[i]);
    keep[k] = false;
    ++folded;
    replace.resize(g.values.size(), kNoValue);
    written.resize(g.values.size(), false);
  }
  if (folded > 0) rewrite(g, keep, replace);
  return folded;
}

}  // namespace ath::graph
