// plan_memory: lifetimes over the schedule, then offsets in one arena (see memory_plan.h).
#include "athanor/graph/memory_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_set>

#include "athanor/core/error.h"

namespace ath::graph {

namespace {

constexpr int64_t kAlign = 64;

int64_t align_up(int64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

int64_t value_bytes(const Value& v) {
  return numel(v.meta.shape) * static_cast<int64_t>(element_size(v.meta.dtype));
}

bool lifetimes_meet(const MemoryPlan::Buffer& a, const MemoryPlan::Buffer& b) {
  return a.first <= b.last && b.first <= a.last;
}

// Stand-ins with the inputs' shapes and dtypes that own one element each (expanded), so a
// workspace rule can look at shapes without the plan allocating the step's memory.
std::vector<Tensor> shape_stand_ins(const Graph& g, const Node& n) {
  std::vector<Tensor> out;
  for (ValueId in : n.inputs) {
    const Value& v = g.value(in);
    out.push_back(empty({1}, v.meta.dtype, v.meta.device)
                      .reshape(Shape(v.meta.shape.size(), 1))
                      .expand(v.meta.shape));
  }
  return out;
}

}  // namespace

const char* category_name(MemoryCategory c) {
  switch (c) {
    case MemoryCategory::Parameters:
      return "parameters";
    case MemoryCategory::Gradients:
      return "gradients";
    case MemoryCategory::OptimizerState:
      return "optimizer state and buffers";
    case MemoryCategory::Inputs:
      return "inputs and constants";
    case MemoryCategory::Outputs:
      return "outputs";
    case MemoryCategory::Activations:
      return "activations (arena)";
    case MemoryCategory::Workspace:
      return "workspace (arena)";
  }
  return "?";
}

int64_t MemoryPlan::total_bytes() const {
  int64_t t = arena_bytes;
  for (MemoryCategory c :
       {MemoryCategory::Parameters, MemoryCategory::Gradients, MemoryCategory::OptimizerState,
        MemoryCategory::Inputs, MemoryCategory::Outputs})
    t += category_bytes(c);
  return t;
}

std::string MemoryPlan::report(const Graph* g) const {
  std::string s = "memory plan (bytes)\n";
  for (std::size_t c = 0; c < bytes.size(); ++c)
    s += fmt::format("  {:<30} {:>14}\n", category_name(static_cast<MemoryCategory>(c)), bytes[c]);
  const auto peak_at = live_after_node.empty()
                           ? live_after_node.end()
                           : std::max_element(live_after_node.begin(), live_after_node.end());
  const int64_t live_peak = peak_at == live_after_node.end() ? 0 : *peak_at;
  s += fmt::format("  {:<30} {:>14}  ({} buffers; most bytes live at once: {})\n", "arena",
                   arena_bytes, buffers.size(), live_peak);
  s += fmt::format("  {:<30} {:>14}\n", "total", total_bytes());
  if (!recomputed.empty()) {
    int64_t freed = 0;
    for (const Recomputation& r : recomputed) freed += r.bytes;
    s += fmt::format("recomputed in the backward instead of saved: {} values, {} bytes\n",
                     recomputed.size(), freed);
    for (const Recomputation& r : recomputed)
      s += fmt::format("  {:>12}  {:<22} {}\n", r.bytes, r.type, r.op);
  }
  if (g != nullptr && peak_at != live_after_node.end()) {
    const auto peak = static_cast<int32_t>(peak_at - live_after_node.begin());
    std::vector<const Buffer*> live;
    for (const Buffer& b : buffers)
      if (b.first <= peak && peak <= b.last) live.push_back(&b);
    std::stable_sort(live.begin(), live.end(),
                     [](const Buffer* a, const Buffer* b) { return a->bytes > b->bytes; });
    s += fmt::format("live at the peak (after node {}): {} buffers, largest first\n", peak,
                     live.size());
    for (std::size_t i = 0; i < live.size() && i < 12; ++i) {
      const Buffer& b = *live[i];
      const std::string what =
          b.value == kNoValue
              ? fmt::format("workspace of {}", g->nodes[static_cast<std::size_t>(b.first)].op->name)
              : fmt::format("%{} = {} {}", b.value,
                            g->nodes[static_cast<std::size_t>(b.first)].op->name,
                            type_string(g->value(b.value).meta, g->value(b.value).strides));
      s += fmt::format("  {:<48} {:>12}  (nodes {}..{})\n", what, b.bytes, b.first, b.last);
    }
  }
  return s;
}

MemoryPlan plan_memory(const Graph& g, std::span<const int32_t> paired_first) {
  MemoryPlan plan;
  const auto num_nodes = static_cast<int32_t>(g.nodes.size());
  // Which state slots are some parameter's gradient buffer.
  std::unordered_set<const TensorImpl*> grad_buffers;
  for (const Tensor& t : g.state_tensors) {
    if (t.requires_grad() && t.grad().defined()) grad_buffers.insert(t.grad().impl());
  }
  std::vector<bool> persistent(g.values.size(), false);  // by storage owner
  auto add = [&](MemoryCategory c, int64_t b) { plan.bytes[static_cast<std::size_t>(c)] += b; };
  for (std::size_t s = 0; s < g.state.size(); ++s) {
    const Tensor& t = g.state_tensors[s];
    const MemoryCategory c = t.requires_grad()              ? MemoryCategory::Parameters
                             : grad_buffers.count(t.impl()) ? MemoryCategory::Gradients
                                                            : MemoryCategory::OptimizerState;
    if (g.storage_of(g.state[s]) == g.state[s]) add(c, value_bytes(g.value(g.state[s])));
  }
  for (ValueId a : g.arguments) add(MemoryCategory::Inputs, value_bytes(g.value(a)));
  for (const Tensor& c : g.constants)
    add(MemoryCategory::Inputs, c.numel() * static_cast<int64_t>(element_size(c.dtype())));
  std::unordered_set<ValueId> kept_outputs;
  for (ValueId o : g.outputs) kept_outputs.insert(g.storage_of(o));
  std::unordered_set<ValueId> assigned_grads;
  for (const GradBinding& b : g.grads) assigned_grads.insert(g.storage_of(b.grad));

  // Lifetimes of the buffers nodes allocate: from their node to the last read of any alias.
  std::vector<int32_t> last_use(g.values.size(), -1);  // by storage owner
  for (int32_t k = 0; k < num_nodes; ++k) {
    const Node& n = g.nodes[static_cast<std::size_t>(k)];
    for (ValueId in : n.inputs) last_use[static_cast<std::size_t>(g.storage_of(in))] = k;
    for (const auto& w : n.writes) last_use[static_cast<std::size_t>(g.storage_of(w.first))] = k;
  }
  std::vector<MemoryPlan::Buffer> buffers;
  for (std::size_t v = 0; v < g.values.size(); ++v) {
    const Value& val = g.values[v];
    if (val.origin != ValueOrigin::Node || val.storage != static_cast<ValueId>(v)) continue;
    const int64_t b = value_bytes(val);
    const auto id = static_cast<ValueId>(v);
    if (assigned_grads.count(id)) {
      add(MemoryCategory::Gradients, b);
    } else if (kept_outputs.count(id)) {
      add(MemoryCategory::Outputs, b);
    } else {
      buffers.push_back({.value = id,
                         .first = val.node,
                         .last = std::max(val.node, last_use[v]),
                         .bytes = b,
                         .category = MemoryCategory::Activations});
      add(MemoryCategory::Activations, b);
    }
  }
  for (int32_t k = 0; k < num_nodes; ++k) {
    const Node& n = g.nodes[static_cast<std::size_t>(k)];
    const std::vector<Tensor> ins = shape_stand_ins(g, n);
    const auto w = static_cast<int64_t>(n.op->workspace_bytes(ins, n.attrs.get()));
    if (w == 0) continue;
    buffers.push_back({.first = k, .last = k, .bytes = w, .category = MemoryCategory::Workspace});
    add(MemoryCategory::Workspace, w);
  }

  // A pair runs as one step: what its first node reads last stays live through the second.
  std::vector<bool> runs_with_next(static_cast<std::size_t>(num_nodes), false);
  for (int32_t k : paired_first)
    if (k >= 0 && k + 1 < num_nodes) runs_with_next[static_cast<std::size_t>(k)] = true;
  for (auto& b : buffers)
    if (runs_with_next[static_cast<std::size_t>(b.last)]) ++b.last;

  plan.live_after_node.assign(static_cast<std::size_t>(num_nodes), 0);
  for (const auto& b : buffers)
    for (int32_t k = b.first; k <= b.last; ++k)
      plan.live_after_node[static_cast<std::size_t>(k)] += b.bytes;

  // Largest first (ties: earliest first), each at the lowest offset free over its lifetime.
  std::stable_sort(buffers.begin(), buffers.end(), [](const auto& a, const auto& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.first < b.first;
  });
  for (MemoryPlan::Buffer& b : buffers) {
    std::vector<std::pair<int64_t, int64_t>> taken;  // [begin, end) of placed, meeting buffers
    for (const MemoryPlan::Buffer& p : plan.buffers)
      if (lifetimes_meet(b, p)) taken.emplace_back(p.offset, p.offset + align_up(p.bytes));
    std::sort(taken.begin(), taken.end());
    int64_t offset = 0;
    for (const auto& [begin, end] : taken) {
      if (begin >= offset + align_up(b.bytes)) break;  // fits in the gap before this one
      offset = std::max(offset, end);
    }
    b.offset = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, offset + align_up(b.bytes));
    plan.buffers.push_back(b);
  }
  return plan;
}

void check_plan(const Graph& g, const MemoryPlan& plan) {
  auto name = [&](const MemoryPlan::Buffer& b) {
    return b.value == kNoValue ? fmt::format("the workspace of node {} ({})", b.first,
                                             g.nodes[static_cast<std::size_t>(b.first)].op->name)
                               : fmt::format("%{}", b.value);
  };
  for (std::size_t i = 0; i < plan.buffers.size(); ++i) {
    const auto& a = plan.buffers[i];
    ATH_CHECK(a.offset >= 0 && a.offset + a.bytes <= plan.arena_bytes, ValueError,
              "memory plan: {} ([{}, {})) lies outside the arena of {} bytes", name(a), a.offset,
              a.offset + a.bytes, plan.arena_bytes);
    for (std::size_t j = i + 1; j < plan.buffers.size(); ++j) {
      const auto& b = plan.buffers[j];
      const bool bytes_meet = a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
      ATH_CHECK(!(bytes_meet && lifetimes_meet(a, b) && a.bytes > 0 && b.bytes > 0), ValueError,
                "memory plan: {} (nodes {}..{}, bytes [{}, {})) and {} (nodes {}..{}, bytes "
                "[{}, {})) are live at once and overlap",
                name(a), a.first, a.last, a.offset, a.offset + a.bytes, name(b), b.first, b.last,
                b.offset, b.offset + b.bytes);
    }
  }
}

}  // namespace ath::graph
