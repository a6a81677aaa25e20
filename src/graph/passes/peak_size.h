// How big a memory plan's peak is, as the passes that lower it without a budget compare plans
// (rematerialize_free, sink_producers): a change is kept only when it makes this smaller.
#pragma once

#include <algorithm>
#include <compare>
#include <cstddef>
#include <cstdint>

#include "athanor/graph/memory_plan.h"

namespace ath::graph::detail {

// In order: the arena, the most bytes live at once, and how many nodes reach that most (so two
// equal peaks come down one at a time).
struct PeakSize {
  int64_t arena = 0, live = 0;
  std::ptrdiff_t nodes_at_live = 0;
  explicit PeakSize(const MemoryPlan& p) : arena(p.arena_bytes) {
    if (p.live_after_node.empty()) return;
    live = *std::max_element(p.live_after_node.begin(), p.live_after_node.end());
    nodes_at_live = std::count(p.live_after_node.begin(), p.live_after_node.end(), live);
  }
  auto operator<=>(const PeakSize&) const = default;
};

// The node where the most bytes are live (the first such), or -1 for an empty plan.
inline int32_t peak_node(const MemoryPlan& p) {
  if (p.live_after_node.empty()) return -1;
  return static_cast<int32_t>(std::max_element(p.live_after_node.begin(), p.live_after_node.end()) -
                              p.live_after_node.begin());
}

}  // namespace ath::graph::detail
