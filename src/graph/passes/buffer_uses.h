// Who reads each buffer of a graph, and which buffers a rewrite must leave alone: the facts the
// fusion passes check before they make one node of several (a value they remove must have no
// other reader, and must not be an output, an assigned gradient, or written in place); and the
// small matching helpers several of them share.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "athanor/graph/graph.h"
#include "athanor/ops/conv.h"

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

// v is float32 of the given rank.
inline bool is_f32(const Graph& g, ValueId v, std::size_t rank) {
  const TensorMeta& m = g.value(v).meta;
  return m.dtype == kFloat32 && m.shape.size() == rank;
}

// A max pool whose windows tile its input without overlap: kernel == stride, no padding,
// dilation 1, floor mode (conv_relu_max_pool's pools).
inline bool disjoint_pool_windows(const MaxPool2dAttrs& m) {
  bool disjoint = !m.ceil_mode;
  for (std::size_t i = 0; i < 2; ++i)
    disjoint = disjoint && m.kernel[i] == m.stride[i] && m.padding[i] == 0 && m.dilation[i] == 1;
  return disjoint;
}

// The node that made v as a fresh result (not a view, version, argument, state or constant), or
// -1.
inline int32_t fresh_producer(const Graph& g, ValueId v) {
  const Value& val = g.value(v);
  return val.origin == ValueOrigin::Node && g.storage_of(v) == v ? val.node : -1;
}

// Whether a node strictly between nodes `from` and `to` writes the buffer of any of `values`: a
// fusion that moves a read from `from` to `to` must not see a write in between.
inline bool written_between(const Graph& g, std::size_t from, std::size_t to,
                            std::initializer_list<ValueId> values) {
  for (std::size_t j = from + 1; j < to; ++j) {
    for (const auto& w : g.nodes[j].writes) {
      const ValueId s = g.storage_of(w.first);
      for (ValueId v : values)
        if (s == g.storage_of(v)) return true;
    }
  }
  return false;
}

}  // namespace ath::graph::detail
