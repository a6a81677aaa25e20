// plan_memory: lifetimes over the schedule, then offsets in one arena (see memory_plan.h).
#include "athanor/graph/memory_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
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

// Whether v covers a buffer of `bytes` densely in row-major order (size-1 dims aside): what an
// element-wise kernel writing its result over v needs.
bool covers_buffer_densely(const Value& v, int64_t bytes) {
  if (value_bytes(v) != bytes || v.strides.size() != v.meta.shape.size()) return false;
  int64_t expect = 1;
  for (std::size_t d = v.meta.shape.size(); d-- > 0;) {
    if (v.meta.shape[d] != 1 && v.strides[d] != expect) return false;
    expect *= v.meta.shape[d];
  }
  return true;
}

// The (input, output) pairs an op may write in place (InplacePolicy).
std::vector<std::pair<std::size_t, std::size_t>> in_place_pairs(InplacePolicy p) {
  switch (p) {
    case InplacePolicy::None:
      return {};
    case InplacePolicy::OverInput0:
      return {{0, 0}};
    case InplacePolicy::OverInput1:
      return {{1, 0}};
    case InplacePolicy::EachOverItsInput:
      return {{0, 0}, {1, 1}};
  }
  return {};
}

// In-place reuse: a node whose op may write a result over an input (InplacePolicy) takes that
// input's buffer for the output when the buffer dies at the node (its last read, and no node
// running beside it reads it), the input covers all of it in the output's dtype and shape, and no
// other input reads it through another layout. Marks such buffers' `over` and returns each
// buffer's unit: buffers written over one another share a unit (one slot).
std::vector<int32_t> share_in_place(const Graph& g, const std::vector<bool>& runs_with_next,
                                    std::vector<MemoryPlan::Buffer>& buffers) {
  std::vector<int32_t> unit_of(buffers.size());
  std::vector<int32_t> buffer_of(g.values.size(), -1);  // by storage owner
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    unit_of[i] = static_cast<int32_t>(i);
    if (buffers[i].value != kNoValue)
      buffer_of[static_cast<std::size_t>(buffers[i].value)] = static_cast<int32_t>(i);
  }
  const auto num_nodes = static_cast<int32_t>(g.nodes.size());
  for (int32_t k = 0; k < num_nodes; ++k) {
    const Node& n = g.nodes[static_cast<std::size_t>(k)];
    if (n.op->kind == OpKind::View || n.write != WriteKind::None) continue;
    ValueId taken = kNoValue;  // a buffer one output took; a second may not share it
    for (const auto& [over, o] : in_place_pairs(n.op->inplace)) {
      if (n.inputs.size() <= over || n.outputs.size() <= o) continue;
      const ValueId in = n.inputs[over], out = n.outputs[o];
      const ValueId s = g.storage_of(in);
      if (s == taken) continue;
      const int32_t ib = buffer_of[static_cast<std::size_t>(s)];
      const int32_t ob = buffer_of[static_cast<std::size_t>(out)];
      if (ib < 0 || ob < 0 || buffers[static_cast<std::size_t>(ib)].last != k) continue;
      const MemoryPlan::Buffer& ibuf = buffers[static_cast<std::size_t>(ib)];
      const Value &iv = g.value(in), &ov = g.value(out);
      if (iv.meta.dtype != ov.meta.dtype || iv.meta.shape != ov.meta.shape ||
          !covers_buffer_densely(iv, ibuf.bytes) || ibuf.bytes != value_bytes(ov))
        continue;
      bool alone = true;  // no other input, and no node running beside this one, reads it
      for (std::size_t i = 0; i < n.inputs.size(); ++i)
        alone = alone && (i == over || n.inputs[i] == in || g.storage_of(n.inputs[i]) != s);
      const int32_t partner = k > 0 && runs_with_next[static_cast<std::size_t>(k - 1)] ? k - 1
                              : runs_with_next[static_cast<std::size_t>(k)]            ? k + 1
                                                                                       : -1;
      if (partner >= 0) {
        const Node& p = g.nodes[static_cast<std::size_t>(partner)];
        for (ValueId v : p.inputs) alone = alone && g.storage_of(v) != s;
      }
      if (!alone) continue;
      taken = s;
      buffers[static_cast<std::size_t>(ob)].over = s;
      unit_of[static_cast<std::size_t>(ob)] = unit_of[static_cast<std::size_t>(ib)];
    }
  }
  return unit_of;
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
      s += fmt::format("  {:<48} {:>12}  (nodes {}..{}{})\n", what, b.bytes, b.first, b.last,
                       b.over == kNoValue ? "" : fmt::format(", in place over %{}", b.over));
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

  // Buffers written over one another in place share one slot: a unit, placed as one buffer
  // over the union of their lifetimes (consecutive: each begins where the one before ends).
  const std::vector<int32_t> unit_of = share_in_place(g, runs_with_next, buffers);
  plan.live_after_node.assign(static_cast<std::size_t>(num_nodes), 0);
  for (const auto& b : buffers)  // an in-place result adds no bytes at the node that makes it
    for (int32_t k = b.over == kNoValue ? b.first : b.first + 1; k <= b.last; ++k)
      plan.live_after_node[static_cast<std::size_t>(k)] += b.bytes;

  struct Unit {
    int32_t first = std::numeric_limits<int32_t>::max(), last = -1;
    int64_t bytes = 0, offset = 0;
    std::vector<std::size_t> members;  // indices into `buffers`
  };
  std::vector<Unit> units(buffers.size());
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    Unit& u = units[static_cast<std::size_t>(unit_of[i])];
    u.first = std::min(u.first, buffers[i].first);
    u.last = std::max(u.last, buffers[i].last);
    u.bytes = std::max(u.bytes, buffers[i].bytes);
    u.members.push_back(i);
  }
  std::erase_if(units, [](const Unit& u) { return u.members.empty(); });
  // Largest first (ties: earliest first), each at the lowest offset free over its lifetime.
  std::stable_sort(units.begin(), units.end(), [](const Unit& a, const Unit& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.first < b.first;
  });
  for (std::size_t u = 0; u < units.size(); ++u) {
    Unit& b = units[u];
    std::vector<std::pair<int64_t, int64_t>> taken;  // [begin, end) of placed, meeting units
    for (std::size_t p = 0; p < u; ++p)
      if (b.first <= units[p].last && units[p].first <= b.last)
        taken.emplace_back(units[p].offset, units[p].offset + align_up(units[p].bytes));
    std::sort(taken.begin(), taken.end());
    int64_t offset = 0;
    for (const auto& [begin, end] : taken) {
      if (begin >= offset + align_up(b.bytes)) break;  // fits in the gap before this one
      offset = std::max(offset, end);
    }
    b.offset = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, offset + align_up(b.bytes));
    for (std::size_t i : b.members) {
      buffers[i].offset = offset;
      plan.buffers.push_back(buffers[i]);
    }
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
      // A result written over a buffer that dies at its node shares exactly that buffer's bytes.
      auto written_over = [](const MemoryPlan::Buffer& x, const MemoryPlan::Buffer& y) {
        return y.over != kNoValue && y.over == x.value && x.last == y.first &&
               x.offset == y.offset && x.bytes == y.bytes;
      };
      const bool in_place = written_over(a, b) || written_over(b, a);
      ATH_CHECK(!(bytes_meet && lifetimes_meet(a, b) && a.bytes > 0 && b.bytes > 0 && !in_place),
                ValueError,
                "memory plan: {} (nodes {}..{}, bytes [{}, {})) and {} (nodes {}..{}, bytes "
                "[{}, {})) are live at once and overlap",
                name(a), a.first, a.last, a.offset, a.offset + a.bytes, name(b), b.first, b.last,
                b.offset, b.offset + b.bytes);
    }
  }
}

}  // namespace ath::graph
