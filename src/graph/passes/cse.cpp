// Common-subexpression elimination: a node equal to an earlier one (same op, equal attributes,
// the same input values) reuses the earlier results.
//
// Legal only when the two read the same data and nobody can tell the results apart afterwards:
// - no write between them reaches an input's buffer (each input is keyed with its buffer's
//   write count at that point);
// - neither node's results are written later (a write through one would show in the other);
// - neither node has side effects or attributes recomputed at replay.
#include <unordered_map>

#include "athanor/graph/passes.h"

namespace ath::graph {

namespace {

struct Key {
  const OpDef* op;
  std::vector<std::pair<ValueId, int>> inputs;  // value, write count of its buffer
  std::size_t attrs_hash;
  bool operator==(const Key& o) const {
    return op == o.op && inputs == o.inputs && attrs_hash == o.attrs_hash;
  }
};

struct KeyHash {
  std::size_t operator()(const Key& k) const {
    std::size_t h = std::hash<const void*>()(k.op) ^ (k.attrs_hash * 0x9e3779b97f4a7c15ull);
    for (const auto& [v, w] : k.inputs)
      h = h * 1000003u ^ static_cast<std::size_t>(v) * 31u ^ static_cast<std::size_t>(w);
    return h;
  }
};

}  // namespace

int eliminate_common_subexpressions(Graph& g) {
  std::vector<bool> written(g.values.size(), false);  // by storage owner
  for (const Node& n : g.nodes)
    for (const auto& w : n.writes) written[static_cast<std::size_t>(g.storage_of(w.first))] = true;
  auto results_written = [&](const Node& n) {
    for (ValueId o : n.outputs)
      if (written[static_cast<std::size_t>(g.storage_of(o))]) return true;
    return false;
  };

  std::vector<int> writes_so_far(g.values.size(), 0);
  std::unordered_map<Key, std::size_t, KeyHash> first;
  std::vector<ValueId> replace(g.values.size(), kNoValue);
  std::vector<bool> keep(g.nodes.size(), true);
  int merged = 0;
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    if (!has_side_effects(n) && !n.attr_source && !results_written(n)) {
      Key key{n.op, {}, n.op->hash_attrs(n.attrs.get())};
      for (ValueId in : n.inputs) {
        ValueId v = in;
        while (replace[static_cast<std::size_t>(v)] != kNoValue)
          v = replace[static_cast<std::size_t>(v)];
        key.inputs.emplace_back(v, writes_so_far[static_cast<std::size_t>(g.storage_of(v))]);
      }
      auto [it, inserted] = first.try_emplace(std::move(key), k);
      const Node& earlier = g.nodes[it->second];
      if (!inserted && n.op->attrs_equal(earlier.attrs.get(), n.attrs.get()) &&
          earlier.outputs.size() == n.outputs.size()) {
        for (std::size_t i = 0; i < n.outputs.size(); ++i)
          replace[static_cast<std::size_t>(n.outputs[i])] = earlier.outputs[i];
        keep[k] = false;
        ++merged;
      }
    }
    for (const auto& w : n.writes) ++writes_so_far[static_cast<std::size_t>(g.storage_of(w.first))];
  }
  if (merged > 0) rewrite(g, keep, replace);
  return merged;
}

}  // namespace ath::graph
