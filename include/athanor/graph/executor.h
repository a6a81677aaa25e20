// The executor: runs a Graph on real tensors.
//
//   #include "athanor/graph/executor.h"
//   #include "athanor/graph/tracer.h"
//   Tensor x = randn({4, 3});
//   graph::Tracer tracer({x});                  // or a graph built by hand (graph.h)
//   graph::Graph g = tracer.finish({relu(x) + 1.0});
//   graph::Executor exec(g);
//   Tensor other = randn({4, 3});
//   std::vector<Tensor> out = exec.run({other});
//   assert(allclose(out[0], relu(other) + 1.0));
//
// Contract:
// - Arguments are bound by position and must match the recorded shapes and dtypes (ValueError
//   otherwise); state and constants are the graph's own tensors, so an in-place write in the
//   graph (an optimizer update, a gradient accumulation) writes the real parameter or buffer.
// - Nodes run in order through the op registry with grad mode and autocast off: the graph
//   already holds the backward ops and the casts, and replaying them must not record again.
//   Writes into input 0 (add_, copy_) compute the op and copy the result in, as call_inplace's
//   out-of-place path does; ops that write their inputs (OpDef::mutates_input) write them.
// - Attributes come from the node's attribute source when it has one (the optimizer's current
//   learning rate), else from the record.
// - A result whose shape differs from the recorded one (a data-dependent shape) throws a
//   ValueError naming the node: never a silently different computation.
// - Each intermediate is released after its last use; outputs and tensors assigned to
//   gradients are kept.
// - With a memory plan (graph/memory_plan.h), every buffer the plan places in its arena is a
//   slice of one block the executor allocates at its first run and keeps: a replay allocates
//   no tensor memory but what outlives it (outputs, assigned gradients) and what kernels make
//   internally. A run that finds the arena in use (the same executor called from two threads at
//   once) allocates as without a plan.
// - Pairs (`paired_first`, from the inter-op schedule, graph/interop.h): nodes k and k + 1 run
//   at the same time, each on one thread of a two-thread OpenMP region, their kernels
//   single-threaded inside it (parallel_for runs inline in a region; oneDNN runs a primitive
//   on one thread inside an active region). The plan must have been made with the same pairs.
//   An error in either node is rethrown after both finish.
// - Afterwards each GradBinding assigns its value to the parameter's `.grad`.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <span>
#include <vector>

#include "athanor/graph/graph.h"
#include "athanor/graph/memory_plan.h"
#include "athanor/graph/profile.h"

namespace ath::graph {

class Executor {
 public:
  explicit Executor(const Graph& graph, std::span<const int32_t> paired_first = {});
  // Runs with the plan's arena; `plan` must be plan_memory(graph, paired_first) (it is copied
  // from).
  Executor(const Graph& graph, const MemoryPlan& plan, std::span<const int32_t> paired_first = {});
  std::vector<Tensor> run(std::span<const Tensor> arguments) const;
  std::vector<Tensor> run(std::initializer_list<Tensor> arguments) const {
    return run(std::span<const Tensor>(arguments.begin(), arguments.size()));
  }
  const Graph& graph() const { return graph_; }

  // Called during a run, once per parameter whose gradient the graph makes or writes, right
  // after the last node that does: its grad() then holds this run's gradient while the rest of
  // the graph still runs. A data-parallel wrapper starts each gradient's all-reduce there, so
  // communication overlaps the replayed backward as it overlaps an eager one.
  using GradientReady = std::function<void(const Tensor& parameter)>;
  void set_gradient_ready(GradientReady fn) { gradient_ready_ = std::move(fn); }

  // What the last run did with its buffers.
  struct RunStats {
    int64_t arena_buffers = 0;      // node outputs and workspaces placed in the arena
    int64_t allocated_buffers = 0;  // node outputs allocated (outputs, gradients; or no arena)
    int64_t pairs = 0;              // pairs of nodes run at the same time
    bool used_arena = false;
  };
  RunStats last_run() const { return last_run_; }
  // The arena's size (0 without a plan) and whether it has been allocated.
  int64_t arena_bytes() const { return arena_bytes_; }
  bool arena_allocated() const { return arena_.defined(); }
  // Frees the arena until the next run allocates it again (between training and evaluation, say);
  // a no-op while a run holds it.
  void release_arena() const;

  // Per-node timing (graph/profile.h), accumulated over the runs made while it is on; turning
  // it on starts a new profile. Const like the arena: it observes runs, it does not change them.
  void set_profiling(bool on) const;
  const NodeProfile& profile() const { return profile_; }

 private:
  // A planned output: which of its node's outputs, where in the arena, and the storage over
  // that slice (made once, when the arena is allocated; each run views it anew).
  struct PlannedOutput {
    int32_t index = 0;
    int64_t offset = 0;
    mutable std::shared_ptr<StorageImpl> storage;
  };
  // Where a node's planned buffers go: its outputs and its workspace.
  struct NodeMemory {
    std::vector<PlannedOutput> outputs;
    int64_t workspace_offset = -1;
    int64_t workspace_bytes = 0;
  };
  void run_node(std::size_t k, std::vector<Tensor>& slot, std::vector<Tensor>& inputs,
                bool use_arena, RunStats& stats) const;
  void run_pair(std::size_t k, std::vector<Tensor>& slot, bool use_arena, RunStats& stats) const;
  void allocate_arena() const;

  const Graph& graph_;
  // Per node: the values whose last reader it is (released after it runs).
  std::vector<std::vector<ValueId>> release_after_;
  std::vector<bool> runs_with_next_;     // per node: it and the next run at the same time
  std::vector<NodeMemory> node_memory_;  // empty without a plan
  // Per node: the parameters (state slots) whose gradient is final after it, and for each the
  // value holding the gradient (an assigned one, set as grad() there) or kNoValue (written in
  // place into the bound grad()).
  std::vector<std::vector<std::pair<int32_t, ValueId>>> grads_final_after_;
  GradientReady gradient_ready_;
  int64_t arena_bytes_ = 0;
  mutable Tensor arena_;
  mutable std::atomic<bool> arena_busy_{false};
  mutable RunStats last_run_;
  mutable bool profiling_ = false;
  mutable NodeProfile profile_;
};

}  // namespace ath::graph
