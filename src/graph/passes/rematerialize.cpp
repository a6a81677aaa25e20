// rematerialize: activations are recomputed where the backward reads them instead of being kept
// alive from the forward (see passes.h for the contract): under a memory budget until the arena
// fits it; without one (rematerialize_free) only element-wise ops whose inputs are still live
// there, one kernel each.
//
// One round: plan the graph, find the node where the most arena bytes are live (the peak), and
// among the buffers live across it pick the best one that (a) a node without side effects made,
// (b) is never written in place, and (c) can be recomputed at its first read after the peak
// from values still available there (persistent, or read there or later anyway, and not
// written in between) — through a short chain of recomputed producers where an input is gone
// (attention's probabilities from the saved Q and K: the scores matmul, then the softmax). A copy
// of the chain, and of the views the late reads went through, runs just before that read; every
// read from there on uses the copy, and the original dies at its last read before the peak.
// Cheap producers come first (element-wise ops, layer_norm, softmax, dropout: one pass over the
// data); only when none is left at the peak do chains with matrix products qualify, best bytes
// per recomputed work first. A round is kept only when the plan's peak comes down (a copy that
// lowers one node's bytes but not the arena is refused, so rounds cannot go on forever: with
// in-place reuse a copy can take as many bytes as the original frees). Rounds repeat until the
// arena fits or nothing at the peak qualifies.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string_view>

#include "athanor/graph/passes.h"
#include "peak_size.h"

namespace ath::graph {

namespace {

enum class Tier { Cheap, Any };

bool cheap_to_recompute(const Node& n) {
  if (n.op->kind == OpKind::Pointwise) return true;
  // Memory-bound ops whose inputs the backward typically keeps: one pass over the data each.
  // (dropout is a pure function of its input and the [seed, offset] pair it was given.)
  static constexpr std::array<std::string_view, 6> kCheap{
      "layer_norm", "softmax", "log_softmax", "dropout", "attention_softmax", "split_heads"};
  return std::find(kCheap.begin(), kCheap.end(), n.op->name) != kCheap.end();
}

bool may_recompute(const Node& n, Tier tier) {
  if (has_side_effects(n) || n.op->kind == OpKind::View) return false;
  return tier == Tier::Any || cheap_to_recompute(n);
}

int64_t bytes_of(const Value& v) {
  return numel(v.meta.shape) * static_cast<int64_t>(element_size(v.meta.dtype));
}

// Relative work of recomputing a node: bytes written, with matrix products and convolutions
// weighted as the compute-bound ops they are.
int64_t recompute_cost(const Graph& g, const Node& n) {
  int64_t out = 0;
  for (ValueId o : n.outputs) out += bytes_of(g.value(o));
  return cheap_to_recompute(n) ? out : 16 * out;
}

// Who touches each buffer, by storage owner: the nodes that read any alias (ascending) and the
// nodes that write one in place.
struct Accesses {
  std::vector<std::vector<int32_t>> reads;
  std::vector<std::vector<int32_t>> writes;

  explicit Accesses(const Graph& g) : reads(g.values.size()), writes(g.values.size()) {
    for (std::size_t k = 0; k < g.nodes.size(); ++k) {
      const auto node = static_cast<int32_t>(k);
      for (ValueId in : g.nodes[k].inputs) {
        auto& r = reads[static_cast<std::size_t>(g.storage_of(in))];
        if (r.empty() || r.back() != node) r.push_back(node);
      }
      for (const auto& w : g.nodes[k].writes)
        writes[static_cast<std::size_t>(g.storage_of(w.first))].push_back(node);
    }
  }
  const std::vector<int32_t>& reads_of(const Graph& g, ValueId v) const {
    return reads[static_cast<std::size_t>(g.storage_of(v))];
  }
};

// The value w reads v's buffer through a chain of views made before node `before`: true when
// every step from w back to v is such a view (so the chain can be replayed over a copy of v).
bool views_back_to(const Graph& g, ValueId w, ValueId v, int32_t before) {
  while (w != v) {
    const Value& val = g.value(w);
    if (val.origin != ValueOrigin::Node || val.version_of != kNoValue || val.node >= before)
      return false;
    const Node& n = g.nodes[static_cast<std::size_t>(val.node)];
    if (n.op->kind != OpKind::View) return false;
    w = n.inputs[0];
  }
  return true;
}

struct Candidate {
  ValueId value = kNoValue;
  std::vector<int32_t> chain;  // the nodes to copy, in schedule order; the last makes `value`
  int32_t first_late_read = -1;
  int64_t bytes = 0;
  int64_t cost = 0;
  // Better: more bytes per unit of recomputed work.
  bool better_than(const Candidate& o) const {
    return o.value == kNoValue || static_cast<double>(bytes) / static_cast<double>(cost) >
                                      static_cast<double>(o.bytes) / static_cast<double>(o.cost);
  }
};

constexpr int kMaxChain = 4;

// Collects into `chain` what recomputing node k at `at` needs: each input is available there
// (persistent or read at `at` or later, and not written since node k), or made by a view or a
// recomputable node that is added to the chain itself.
bool collect_inputs(const Graph& g, const Accesses& acc, int32_t k, int32_t at, Tier tier,
                    std::vector<int32_t>& chain, int max_chain, int depth = 0) {
  for (ValueId in : g.nodes[static_cast<std::size_t>(k)].inputs) {
    const ValueId s = g.storage_of(in);
    for (int32_t w : acc.writes[static_cast<std::size_t>(s)])
      if (w > k && w < at) return false;
    if (g.value(s).origin != ValueOrigin::Node) continue;
    const auto& r = acc.reads_of(g, in);
    if (!r.empty() && r.back() >= at) continue;
    const Value& val = g.value(in);
    if (val.version_of != kNoValue) return false;
    if (std::find(chain.begin(), chain.end(), val.node) != chain.end()) continue;
    const Node& q = g.nodes[static_cast<std::size_t>(val.node)];
    if (q.op->kind != OpKind::View && !may_recompute(q, tier)) return false;
    if (depth + 1 >= max_chain) return false;
    if (!collect_inputs(g, acc, val.node, at, tier, chain, max_chain, depth + 1)) return false;
    chain.push_back(val.node);
    if (static_cast<int>(chain.size()) >= max_chain) return false;
  }
  return true;
}

// Whether the buffer `b` (live across node `peak`) can be recomputed at its first read after
// the peak; fills `c` when it can.
bool recomputable(const Graph& g, const Accesses& acc, const MemoryPlan::Buffer& b, int32_t peak,
                  Tier tier, Candidate& c, int max_chain = kMaxChain) {
  const ValueId v = b.value;
  if (v == kNoValue || b.first >= peak || b.last <= peak) return false;
  const Node& producer = g.nodes[static_cast<std::size_t>(b.first)];
  if (!may_recompute(producer, tier) || !acc.writes[static_cast<std::size_t>(v)].empty())
    return false;
  // Worth it only for the producer's main result: recomputing a layer_norm to drop its
  // 128-byte mean would redo the whole normalization for nothing.
  int64_t produced = 0;
  for (ValueId o : producer.outputs) produced += bytes_of(g.value(o));
  if (2 * b.bytes < produced) return false;
  const auto& reads = acc.reads[static_cast<std::size_t>(v)];
  const auto late = std::upper_bound(reads.begin(), reads.end(), peak);
  if (late == reads.end()) return false;
  const int32_t at = *late;
  std::vector<int32_t> chain;
  if (!collect_inputs(g, acc, b.first, at, tier, chain, max_chain)) return false;
  std::sort(chain.begin(), chain.end());  // the schedule's order is a topological one
  chain.push_back(b.first);
  // Every late read must reach v directly or through views made before `at` (views made later
  // are themselves late reads and follow the copy).
  for (auto it = late; it != reads.end(); ++it) {
    const Node& n = g.nodes[static_cast<std::size_t>(*it)];
    for (ValueId in : n.inputs) {
      if (g.storage_of(in) != v) continue;
      if (g.value(in).node >= at && in != v) continue;
      if (!views_back_to(g, in, v, at)) return false;
    }
  }
  int64_t cost = 0;
  for (int32_t k : chain) cost += recompute_cost(g, g.nodes[static_cast<std::size_t>(k)]);
  c = {v, std::move(chain), at, b.bytes, std::max<int64_t>(cost, 1)};
  return true;
}

// Inserts a copy of c.chain (and of the views late reads go through) before c.first_late_read,
// and points every read of c.value from there on at the copy.
void recompute(Graph& g, const Candidate& c) {
  const auto at = static_cast<std::size_t>(c.first_late_read);
  const std::vector<ValueId> old_storage = [&] {
    std::vector<ValueId> s(g.values.size());
    for (std::size_t i = 0; i < s.size(); ++i) s[i] = g.values[i].storage;
    return s;
  }();
  std::vector<Node> inserted;
  std::vector<ValueId> copy_of(g.values.size(), kNoValue);
  auto fresh_copy = [&](ValueId o, ValueId storage) {
    Value val = g.value(o);
    val.name.clear();
    const ValueId fresh = g.add_value(std::move(val));
    g.values[static_cast<std::size_t>(fresh)].storage = storage == kNoValue ? fresh : storage;
    copy_of.resize(g.values.size(), kNoValue);
    copy_of[static_cast<std::size_t>(o)] = fresh;
    return fresh;
  };
  // The chain: each node copied with fresh outputs (views: over their input's copy), reading
  // the copies of what the chain made before it.
  for (int32_t k : c.chain) {
    Node copy = g.nodes[static_cast<std::size_t>(k)];
    for (ValueId& in : copy.inputs)
      if (copy_of[static_cast<std::size_t>(in)] != kNoValue)
        in = copy_of[static_cast<std::size_t>(in)];
    const bool view = copy.op->kind == OpKind::View;
    for (ValueId& o : copy.outputs)
      o = fresh_copy(o, view ? g.storage_of(copy.inputs[0]) : kNoValue);
    inserted.push_back(std::move(copy));
  }
  const ValueId base = copy_of[static_cast<std::size_t>(c.value)];
  // The copy of a view chain w -> ... -> v over the recomputed buffer (memoized).
  auto copy_chain = [&](auto& self, ValueId w) -> ValueId {
    if (copy_of[static_cast<std::size_t>(w)] != kNoValue)
      return copy_of[static_cast<std::size_t>(w)];
    const Node& view = g.nodes[static_cast<std::size_t>(g.value(w).node)];
    Node n = view;
    n.inputs[0] = self(self, view.inputs[0]);
    const ValueId fresh = fresh_copy(w, base);
    n.outputs = {fresh};
    inserted.push_back(std::move(n));
    return fresh;
  };
  for (std::size_t k = at; k < g.nodes.size(); ++k) {
    Node& n = g.nodes[k];
    for (ValueId& in : n.inputs) {
      if (static_cast<std::size_t>(in) >= old_storage.size() ||
          old_storage[static_cast<std::size_t>(in)] != c.value)
        continue;
      // A view made at or after `at` was itself redirected; its value now aliases the copy.
      if (in != c.value && g.value(in).node >= static_cast<int32_t>(at)) continue;
      in = copy_chain(copy_chain, in);
    }
    if (n.op->kind == OpKind::View) {
      for (ValueId o : n.outputs)
        g.values[static_cast<std::size_t>(o)].storage = g.storage_of(n.inputs[0]);
    }
  }
  std::vector<Node> nodes;
  nodes.reserve(g.nodes.size() + inserted.size());
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    if (k == at)
      for (Node& n : inserted) nodes.push_back(std::move(n));
    nodes.push_back(std::move(g.nodes[k]));
  }
  g.nodes = std::move(nodes);
  // rewrite() renumbers values in the new schedule order and recomputes which node made each.
  rewrite(g, std::vector<bool>(g.nodes.size(), true),
          std::vector<ValueId>(g.values.size(), kNoValue));
}

std::string ops_of(const Graph& g, const Candidate& c) {  // "mm+attention_softmax"
  std::string ops;
  for (int32_t k : c.chain) {
    const Node& n = g.nodes[static_cast<std::size_t>(k)];
    if (n.op->kind == OpKind::View) continue;
    if (!ops.empty()) ops += '+';
    ops += n.op->name;
  }
  return ops;
}

Recomputation recomputation_of(const Graph& g, const Candidate& c) {
  return {ops_of(g, c), type_string(g.value(c.value).meta, g.value(c.value).strides), c.bytes};
}

// Rounds until `pick` finds nothing or `done`: the candidate `pick` chooses at the plan's peak
// (among buffers not refused) is recomputed on a copy of the graph, kept when the plan's peak
// comes down, and refused otherwise (until a kept one changes the graph and its numbering).
template <class Pick, class Done>
RematReport lower_peak(Graph& g, const Pick& pick, const Done& done) {
  RematReport report;
  MemoryPlan plan = plan_memory(g);
  report.arena_before = plan.arena_bytes;
  std::vector<ValueId> refused;
  for (int32_t peak = detail::peak_node(plan); peak >= 0 && !done(plan);
       peak = detail::peak_node(plan)) {
    const Candidate best = pick(Accesses(g), plan, peak, refused);
    if (best.value == kNoValue) break;
    Graph trial = g;
    recompute(trial, best);
    MemoryPlan trial_plan = plan_memory(trial);
    if (detail::PeakSize(trial_plan) >= detail::PeakSize(plan)) {
      refused.push_back(best.value);
      continue;
    }
    report.recomputed.push_back(recomputation_of(g, best));
    g = std::move(trial);
    plan = std::move(trial_plan);
    refused.clear();
  }
  report.arena_after = plan.arena_bytes;
  return report;
}

bool is_refused(const std::vector<ValueId>& refused, ValueId v) {
  return std::find(refused.begin(), refused.end(), v) != refused.end();
}

}  // namespace

RematReport rematerialize_free(Graph& g) {
  // An element-wise op from inputs still there: the largest first. Each copy is one more kernel
  // (a parallel region: ~0.5 ms on a loaded host), so only element-wise ops, whose copies save
  // the most bytes per kernel (W4's GELUs: 4 MB each); layer norms and softmaxes wait for a
  // budget. A buffer nothing but views reads before the peak is the "sink" pass's: moving its
  // node there costs nothing.
  auto read_early = [&](const Accesses& acc, ValueId v, int32_t peak) {
    for (int32_t k : acc.reads[static_cast<std::size_t>(v)])
      if (k <= peak && g.nodes[static_cast<std::size_t>(k)].op->kind != OpKind::View) return true;
    return false;
  };
  auto pick = [&](const Accesses& acc, const MemoryPlan& plan, int32_t peak,
                  const std::vector<ValueId>& refused) {
    Candidate best;
    for (const MemoryPlan::Buffer& b : plan.buffers) {
      Candidate c;
      if (!is_refused(refused, b.value) &&
          g.nodes[static_cast<std::size_t>(b.first)].op->kind == OpKind::Pointwise &&
          recomputable(g, acc, b, peak, Tier::Cheap, c, /*max_chain=*/1) && c.bytes > best.bytes &&
          read_early(acc, b.value, peak))
        best = std::move(c);
    }
    return best;
  };
  return lower_peak(g, pick, [](const MemoryPlan&) { return false; });
}

RematReport rematerialize(Graph& g, int64_t arena_budget) {
  auto pick = [&](const Accesses& acc, const MemoryPlan& plan, int32_t peak,
                  const std::vector<ValueId>& refused) {
    Candidate best;
    for (Tier tier : {Tier::Cheap, Tier::Any}) {
      for (const MemoryPlan::Buffer& b : plan.buffers) {
        Candidate c;
        if (!is_refused(refused, b.value) && recomputable(g, acc, b, peak, tier, c) &&
            c.better_than(best))
          best = std::move(c);
      }
      if (best.value != kNoValue) break;  // matrix products only when nothing cheap is left
    }
    return best;
  };
  RematReport report =
      lower_peak(g, pick, [&](const MemoryPlan& plan) { return plan.arena_bytes <= arena_budget; });
  eliminate_dead_code(g);  // originals all of whose reads now go to their copies
  report.arena_after = plan_memory(g).arena_bytes;
  return report;
}

}  // namespace ath::graph
