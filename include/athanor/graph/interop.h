// The inter-op schedule: two independent nodes near each other in the schedule run at the same
// time, each on one of the OpenMP threads, where a cost model says the pair finishes sooner
// than the two nodes one after the other on all threads (the "interop" pass; switch it off with
// `compile(fn, {.disable_passes = {"interop"}})`).
//
//   #include "athanor/graph/executor.h"
//   #include "athanor/graph/interop.h"
//   graph::Graph g;
//   graph::ValueId x = g.add_argument({{4096}, kFloat32});
//   graph::ValueId a = g.add_node(op_exp(), NoAttrs{}, {x})[0];
//   graph::ValueId b = g.add_node(op_neg(), NoAttrs{}, {x})[0];
//   g.outputs = {a, b};
//   assert(!graph::must_follow(g, 0, 1));       // neither reads what the other makes
//   // A margin of -100 pairs every candidate; the default one pairs only where it wins.
//   graph::InteropOptions all{.costs = {.margin = -100, .threads = 2}};
//   graph::InteropSchedule s = graph::schedule_interop(g, all);  // may reorder g's nodes
//   assert(s.pairs.size() == 1 && s.pairs[0].first == 0);
//   std::vector<int32_t> pairs = s.paired_first();
//   graph::Executor exec(g, graph::plan_memory(g, pairs), pairs);
//   Tensor in = randn({4096});
//   assert(equal(exec.run({in})[1], -in));
//
// How it decides:
// - Dependencies (`must_follow`): node b must stay after node a when b reads a value a makes,
//   one writes a buffer (Graph::storage_of) the other reads or writes, or both have side effects
//   (a write, a random draw). Only nodes without side effects and that are not views pair up.
// - Candidates: for a node i, each node j up to `window` nodes later that depends on nothing in
//   [i, j) but cheap nodes that i does not reach (views, mostly); those move before i and j
//   right after it, which keeps every dependency's order.
// - Cost: each node's work is its FLOPs (matrix products, convolutions and their weight
//   gradients, fused first layers, attention and recurrent sequences, and their backwards) and
//   the bytes it reads and writes. On one thread it takes flops / gemm_1 + bytes / bw_1; on all
//   threads flops / gemm_n + bytes / bw_n plus a parallel region's overhead. Run together, a
//   pair takes the longer of the two on one thread, but no less than both nodes' work at the
//   all-thread rates (they share the memory bandwidth and the cores), plus one region. A pair
//   is chosen when that is below the two nodes' all-thread times by `margin` (relative).
// - The memory plan (plan_memory with the pairs) treats a pair as one step: a buffer last read
//   by the first node stays live through the second, so the two never share arena bytes. That,
//   and moving a partner's dependencies ahead, lengthens lives; with `max_arena` a pair that
//   would take the arena past it is left out.
// Results do not change: every kernel computes the same bits on one thread as on several.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "athanor/graph/graph.h"

namespace ath::graph {

// Whether node b (later in the schedule) must stay after node a.
bool must_follow(const Graph& g, int32_t a, int32_t b);
// Whether a node may run beside another: no side effects, not a view, a fresh output.
bool can_pair(const Node& n);

// Rates of a machine, for the cost model. compile() measures them once per process
// (calibrated_interop_costs); these defaults, for hand-made schedules and tests, are the
// development host's (2 cores, AVX-512) in a quiet moment (`athanor_e2e --calibrate-interop`):
// all threads nearly twice as fast as one, a parallel region cheap.
struct InteropCosts {
  double gemm_1 = 250e9;   // FLOP/s of an f32 GEMM on one thread (inside a parallel region)
  double gemm_n = 470e9;   // FLOP/s on all threads
  double bw_1 = 110e9;     // bytes/s an element-wise kernel moves on one thread (2 MB operands)
  double bw_n = 160e9;     // bytes/s on all threads
  double region = 0.5e-6;  // seconds to enter and leave a parallel region (waking a thread)
  double margin = 0.10;    // a pair must be this much faster (relative) to be chosen
  int threads = 0;         // 0: ath::get_num_threads() when the schedule is made
};

struct NodeWork {
  double flops = 0;  // matrix-product work (products, convolutions, attention, RNN steps)
  double bytes = 0;  // bytes read and written
};
NodeWork node_work(const Graph& g, const Node& n);
// Seconds a node takes on one thread (alone = false) or on all threads.
double node_seconds(const NodeWork& w, const InteropCosts& c, bool all_threads);
// Seconds two nodes take together (one thread each) and one after the other (all threads).
double pair_seconds_together(const NodeWork& a, const NodeWork& b, const InteropCosts& c);
double pair_seconds_serial(const NodeWork& a, const NodeWork& b, const InteropCosts& c);

struct InteropPair {
  int32_t first = 0;  // nodes `first` and `first + 1` run together
  double serial_s = 0, together_s = 0;
};

struct InteropSchedule {
  std::vector<InteropPair> pairs;
  int candidates = 0;          // independent pairs the model looked at
  int moved = 0;               // nodes moved to bring pairs together
  int refused_for_memory = 0;  // chosen pairs left out: the arena would pass max_arena
  int threads = 0;             // the thread count the model assumed
  InteropCosts costs;          // the rates it used
  std::vector<int32_t> paired_first() const;
  double predicted_gain_s() const;  // sum over pairs of serial - together
  // One line per pair: its nodes, the model's serial and together times.
  std::string report(const Graph& g) const;
};

struct InteropOptions {
  InteropCosts costs;
  int window = 8;  // how far ahead of a node its partner may be
  // > 0: a pair whose schedule makes the memory plan (plan_memory with the pairs) need more
  // arena bytes than this is refused. compile() passes the arena the graph needs before the
  // schedule (or the memory budget, if more), so pairs never undo what the planner saved.
  int64_t max_arena = 0;
};
// Chooses pairs and reorders g's nodes so each pair is adjacent (a reorder that keeps every
// must_follow order). With fewer than two threads it chooses nothing.
InteropSchedule schedule_interop(Graph& g, const InteropOptions& options = {});

// Runs `first` and `second` at the same time, each on one thread of a two-thread OpenMP region
// (both on the caller's thread, one after the other, when the region gets one thread). Inside,
// parallel_for runs inline and oneDNN runs its primitives on the calling thread. An exception
// from either is rethrown after both finish (the first's first).
void run_concurrently(const std::function<void()>& first, const std::function<void()>& second);

// Measures this machine's rates as it is now (0.05-0.2 s): an empty two-thread region, then a
// GEMM and an element-wise add on all threads and on one thread inside a two-thread region.
// On a machine that other processes keep busy, waking the second thread dominates: the region
// costs hundreds of microseconds and all threads run slower than one.
InteropCosts measure_interop_costs();
// measure_interop_costs() once per process and thread count (what compile() uses by default).
const InteropCosts& calibrated_interop_costs();

}  // namespace ath::graph
