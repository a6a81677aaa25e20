// The memory plan of a graph: every buffer the step allocates and frees (activations, saved
// tensors, backward intermediates, kernel workspaces) gets an offset in one arena, from the
// lifetimes the schedule gives it, so buffers whose lifetimes do not overlap share bytes. The
// plan also counts what lives outside the arena: parameters, gradients, optimizer state.
//
//   #include "athanor/graph/memory_plan.h"
//   #include "athanor/graph/tracer.h"
//   Tensor x = randn({256, 64});
//   graph::Tracer tracer({x});
//   Tensor r = relu(x);
//   Tensor y = r * 2.0 + r;
//   graph::Graph g = tracer.finish({exp(y)});
//   graph::MemoryPlan plan = graph::plan_memory(g);
//   graph::check_plan(g, plan);        // no two buffers live at once share a byte
//   // relu's and the multiply's results are live at the add, which writes over the latter.
//   assert(plan.arena_bytes == 2 * 256 * 64 * 4);
//
// How it plans:
// - A buffer is a value a node allocates (not a view, not an in-place version: those use their
//   base's buffer). It is live from the node that makes it to the last node that reads it or
//   any view or version of it. Graph outputs and gradients the step assigns outlive the step;
//   they are counted as outputs / gradients, outside the arena.
// - Saved activations need nothing special: the backward nodes that read them are in the
//   schedule, so their lifetimes reach there.
// - A kernel's workspace (OpDef::workspace_bytes) is a buffer live during its node only.
// - In place: a node whose op may write over an input (InplacePolicy: input 0 for the
//   element-wise ops and attention's softmax and its backward, the logits for
//   cross_entropy_backward) takes that input's buffer for its result when the buffer dies there
//   — the input covers it densely with the result's shape and dtype, no other input reads it,
//   and no node running beside it does. W4's GELU backward writes over the gradient it
//   multiplies. The two buffers form one unit in the placement.
// - Nodes that run at the same time (the inter-op schedule, graph/interop.h: node k and k + 1
//   for each k in `paired_first`) count as one step: a buffer last read by the first of a pair
//   stays live through the second, so the pair's buffers never share bytes.
// - Offsets: largest units first, each at the lowest 64-byte-aligned offset that overlaps no
//   placed unit whose lifetime intersects its own (first fit). `live_after_node` is the lower
//   bound any placement has; on the workloads the arena equals it, or nearly.
// The executor (graph/executor.h) runs replays in the plan: it allocates the arena once and
// hands each planned buffer to its kernel as a slice at the planned offset.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "athanor/graph/graph.h"

namespace ath::graph {

enum class MemoryCategory : uint8_t {
  Parameters,      // state tensors that require grad
  Gradients,       // parameters' .grad buffers, read or assigned by the step
  OptimizerState,  // other state: optimizer moments, step counters, module buffers
  Inputs,          // the step's arguments and constants
  Outputs,         // what the step returns
  Activations,     // arena: every buffer the step allocates and frees
  Workspace,       // arena: kernels' scratch
};
const char* category_name(MemoryCategory c);

// A value the backward recomputes instead of keeping alive from the forward (a plan made under
// a memory budget; see graph::rematerialize).
struct Recomputation {
  std::string op;    // the op that recomputes it
  std::string type;  // "f32[64,512]"
  int64_t bytes = 0;
};

struct MemoryPlan {
  struct Buffer {
    ValueId value = kNoValue;     // kNoValue for a workspace
    int32_t first = 0, last = 0;  // nodes: made at `first`, last read at `last`
    int64_t bytes = 0;
    int64_t offset = 0;  // in the arena
    MemoryCategory category = MemoryCategory::Activations;
    // In place: the buffer (storage owner) this one is written over. That buffer's last read
    // is this one's first node, whose kernel reads it element by element as it writes this.
    ValueId over = kNoValue;
  };
  std::vector<Buffer> buffers;  // the arena's, in the order they were placed
  int64_t arena_bytes = 0;      // the arena's size: its peak
  // Bytes by category (index: MemoryCategory), the arena's counted without reuse.
  std::vector<int64_t> bytes = std::vector<int64_t>(7, 0);
  // Live arena bytes after each node (the sum of live buffers' sizes): the arena cannot be
  // smaller than the largest of these.
  std::vector<int64_t> live_after_node;

  // Under a memory budget: what the backward recomputes (CompileOptions::memory_budget).
  std::vector<Recomputation> recomputed;

  int64_t category_bytes(MemoryCategory c) const { return bytes[static_cast<std::size_t>(c)]; }
  // Persistent bytes (parameters, gradients, optimizer state, inputs, outputs) plus the arena.
  int64_t total_bytes() const;
  // A table: bytes per category, the arena and its live peak, what is recomputed; given the
  // graph, also the buffers live at the peak (what the step saves there), largest first.
  std::string report(const Graph* g = nullptr) const;
};

MemoryPlan plan_memory(const Graph& g, std::span<const int32_t> paired_first = {});
// Throws ValueError naming both values if two buffers whose lifetimes intersect overlap in the
// arena, or a buffer lies outside it.
void check_plan(const Graph& g, const MemoryPlan& plan);

}  // namespace ath::graph
