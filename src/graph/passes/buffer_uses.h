// Who reads each buffer of a graph, and which buffers a rewrite must leave alone: the facts the
// fusion passes check before they make one node of several (a value they remove must have no
// other reader, and must not be an output, an assigned gradient, or written in place).
#pragma once

#include <cstdint>
#include <vector>

#include "athanor/graph/graph.h"

namespace ath::graph::detail {

struct BufferUses {
  // By storage owner: the nodes reading the buffer (through any view or version), in order.
  std::vector<std::vector<int32_t>> readers;
  // By storage owner: a graph output, an assigned gradient, or written in place by some node.
  std::vector<bool> pinned;

  // v's buffer is read by exactly one node and is free to disappear into a fused node.
  bool private_to_one_reader(const Graph& g, ValueId v) const {
    const auto s = static_cast<std::size_t>(g.storage_of(v));
    return readers[s].size() == 1 && !pinned[s];
  }
};

inline BufferUses buffer_uses(const Graph& g) {
  BufferUses u{std::vector<std::vector<int32_t>>(g.values.size()),
               std::vector<bool>(g.values.size(), false)};
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    for (ValueId in : g.nodes[k].inputs)
      u.readers[static_cast<std::size_t>(g.storage_of(in))].push_back(static_cast<int32_t>(k));
    for (const auto& w : g.nodes[k].writes)
      u.pinned[static_cast<std::size_t>(g.storage_of(w.first))] = true;
  }
  for (ValueId o : g.outputs) u.pinned[static_cast<std::size_t>(g.storage_of(o))] = true;
  for (const GradBinding& b : g.grads)
    u.pinned[static_cast<std::size_t>(g.storage_of(b.grad))] = true;
  return u;
}

}  // namespace ath::graph::detail
