// sink: a node whose results nothing reads until after the arena's peak moves down to just before
// their first reader, so they no longer hold bytes at the peak (see passes.h for the contract).
//
// The backward's order comes from the autograd engine, which computes a node's input gradients
// together: W4's MLP backward makes the GELU's input gradient (a [B, T, 4C] matrix product) and
// then the second linear's weight gradient, which reads the GELU's output — recomputed there by
// rematerialize_free, so two [B, T, 4C] buffers are live at once. Moving the matrix product
// after the weight gradient leaves one. A move is a reorder, so it costs nothing at run time.
#include <algorithm>

#include "athanor/graph/interop.h"
#include "athanor/graph/passes.h"
#include "peak_size.h"

namespace ath::graph {

namespace {

// The producer and the views of its results made before its first reader, in schedule order,
// and the reader they move in front of.
struct Move {
  std::vector<int32_t> moved;
  int32_t target = -1;
  int64_t bytes = 0;
};

bool movable(const Node& n) {
  return !has_side_effects(n) && !n.attr_source && n.write == WriteKind::None &&
         n.op->kind != OpKind::View && !n.outputs.empty();
}

// Whether the producer of `b` (live across `peak`, read by nothing but views before it) can move
// to just before its first reader; fills `m` when it can.
bool sinkable(const Graph& g, int32_t peak, const MemoryPlan::Buffer& b, Move& m) {
  if (b.value == kNoValue || b.first > peak || b.last <= peak) return false;
  const int32_t producer = b.first;
  const Node& n = g.nodes[static_cast<std::size_t>(producer)];
  if (!movable(n)) return false;
  auto reads_a_result = [&](const Node& x) {
    for (ValueId in : x.inputs) {
      const ValueId s = g.storage_of(in);
      for (ValueId o : n.outputs)
        if (g.storage_of(o) == s) return true;
    }
    return false;
  };
  std::vector<int32_t> moved{producer};
  int32_t target = -1;
  const auto num_nodes = static_cast<int32_t>(g.nodes.size());
  for (int32_t k = producer + 1; k < num_nodes && target < 0; ++k) {
    const Node& x = g.nodes[static_cast<std::size_t>(k)];
    if (!reads_a_result(x)) continue;
    if (x.op->kind == OpKind::View && x.write == WriteKind::None) {
      moved.push_back(k);  // a view goes along: it costs nothing and its readers follow
    } else {
      target = k;
    }
  }
  if (target <= peak) return false;  // read at the peak (or never: an output, not the arena's)
  // The nodes the move passes must not depend on anything that moves.
  for (int32_t k = producer + 1; k < target; ++k) {
    if (std::binary_search(moved.begin(), moved.end(), k)) continue;
    for (int32_t x : moved)
      if (must_follow(g, x, k)) return false;
  }
  m = {std::move(moved), target, b.bytes};
  return true;
}

void apply(Graph& g, const Move& m) {
  std::vector<int32_t> order;
  order.reserve(g.nodes.size());
  const int32_t first = m.moved.front();
  for (int32_t k = 0; k < first; ++k) order.push_back(k);
  for (int32_t k = first; k < m.target; ++k)
    if (!std::binary_search(m.moved.begin(), m.moved.end(), k)) order.push_back(k);
  order.insert(order.end(), m.moved.begin(), m.moved.end());
  for (auto k = m.target; k < static_cast<int32_t>(g.nodes.size()); ++k) order.push_back(k);
  reorder_nodes(g, order);
}

}  // namespace

int sink_producers(Graph& g) {
  MemoryPlan plan = plan_memory(g);
  int moves = 0;
  std::vector<ValueId> refused;  // buffers whose move lowered nothing (since the last move)
  for (int32_t peak = detail::peak_node(plan); peak >= 0; peak = detail::peak_node(plan)) {
    Move best;
    ValueId best_value = kNoValue;
    for (const MemoryPlan::Buffer& b : plan.buffers) {
      Move m;
      if (std::find(refused.begin(), refused.end(), b.value) != refused.end() ||
          !sinkable(g, peak, b, m) || m.bytes <= best.bytes)
        continue;
      best = std::move(m);
      best_value = b.value;
    }
    if (best_value == kNoValue) break;
    Graph trial = g;
    apply(trial, best);
    MemoryPlan trial_plan = plan_memory(trial);
    if (detail::PeakSize(trial_plan) >= detail::PeakSize(plan)) {
      refused.push_back(best_value);
      continue;
    }
    g = std::move(trial);
    plan = std::move(trial_plan);
    refused.clear();
    ++moves;
  }
  return moves;
}

}  // namespace ath::graph
