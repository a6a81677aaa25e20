// Graph passes: rewrites that keep what a graph computes and make it cheaper to run. Each is
// named, runs alone on any graph, returns how many nodes it changed, and can be switched off by
// name in CompileOptions (or here, in PassOptions).
//
//   #include "athanor/graph/passes.h"
//   #include "athanor/graph/tracer.h"
//   Tensor x = randn({8});
//   graph::Tracer tracer({x});
//   Tensor unused = exp(x);                     // reaches no output: dce removes it
//   graph::Graph g = tracer.finish({relu(x)});
//   graph::PassReport report = graph::run_passes(g, {.disabled = {"cse"}});
//   assert(!report.passes.empty() && g.count("exp") == 0);
//
// | name          | what it does                                                           |
// |---------------|------------------------------------------------------------------------|
// | fold          | runs nodes whose inputs are all constants (<= 1 MiB of results) once,   |
// |               | at compile time; their results become constants                        |
// | simplify      | drops nodes whose result is exactly an existing value: x*1, x/1,       |
// |               | neg(neg(x)), view chains that return to x's own layout (transpose of a |
// |               | transpose, reshapes back to x's shape); only where no later write can  |
// |               | tell them apart                                                        |
// | cse           | merges nodes that compute the same op, attributes and inputs, when no  |
// |               | write between them reaches an input and none of their results is       |
// |               | written later                                                          |
// | linear        | inference only: mm/matmul by a constant weight W [K, N] (through a     |
// |               | view) and the add of a constant bias along the last dim become        |
// |               | linear(x, W^T, bias) (W^T a new constant): oneDNN adds the bias; a      |
// |               | product without one becomes linear too. Bit-identical                  |
// | gelu          | inference only: x * 0.5 * (1 + erf(x / sqrt 2)), in the orders          |
// |               | exporters write it (mul by 1/sqrt 2, 0.5 first, division by 2), becomes |
// |               | one gelu node (ops/activations.h). Within 2 ulp, not bit-identical     |
// | attention     | inference only: softmax(matmul(q*c1, k^T*c2) [*c3 or /c3] [+ M]) with  |
// |               | one-element constants c and M a constant exactly-causal mask (0 on and |
// |               | below the diagonal, -inf above) becomes attention_softmax(matmul(q,   |
// |               | k^T), c1*c2*c3, causal) (ops/attention.h). Within a few ulp            |
// | heads         | inference only: attention operands cut out of one projection by chains |
// |               | of views, index_selects and clones become split_heads outputs; a      |
// |               | permute -> clone -> view of an attention output feeding a linear       |
// |               | becomes merge_heads. Checked by running both on element numbers.       |
// |               | Bit-identical                                                          |
// | self_         | inference only: split_heads -> matmul(q, k^T) -> attention_softmax ->  |
// |   attention   | matmul(., v) -> merge_heads over one packed projection becomes one     |
// |               | self_attention node (ops/attention.h): scores stay in cache, q/k/v are |
// |               | read in place. Within a few ulp                                        |
// | select_view   | inference only: index_select of one constant index becomes a slice     |
// |               | (a view) where every view reading it still works on the strided      |
// |               | slice. Bit-identical                                                   |
// | log_softmax_  | log_softmax -> nll_loss (and their backward ops) become cross_entropy  |
// |   nll         | and cross_entropy_backward: the log-probabilities are never stored.    |
// |               | Not bit-identical (within a few ulp): off by name where bits must match |
// | bn_fold       | inference only: an eval-mode batch_norm after a convolution or linear    |
// |               | with constant weights is folded into their weight and bias              |
// | epilogue      | a linear or forward convolution read only by a relu becomes            |
// |               | linear_relu / convolution_relu: oneDNN applies the ReLU as it writes   |
// |               | the output (a post-op), and the pre-activation is never stored         |
// | conv_pool     | inference only: a convolution_relu with at most 4 input channels (a     |
// |               | network's first layer) read only by a non-overlapping max pool whose   |
// |               | indices nobody reads becomes one conv_relu_max_pool (ops/conv_pool.h): |
// |               | the convolution's output is never stored. Within a few ulp            |
// | blocked_      | inference only (PassOptions::inference): float32 convolutions become     |
// |   layout      | conv_blocked on oneDNN's channel-blocked layout with weights packed once; |
// |               | conv -> add -> relu becomes one node (sum + relu post-ops); max and       |
// |               | global average pools of blocked values stay blocked (ops/conv_blocked.h)  |
// | pack_linear   | inference only: a float32 linear / linear_relu with a constant weight     |
// |               | becomes linear_packed, its weight reordered into oneDNN's matmul format  |
// |               | once (ops/linear_packed.h)                                               |
// | pool_mask     | ReLU's backward mask on a max-pool's backward scatter becomes one      |
// |               | max_pool2d_backward_masked: the mask reads the pooled values, and the  |
// |               | gradient is written once (W2's conv -> relu -> pool backward)          |
// | conv_pool_    | training graphs, after pool_mask: the same with one input channel and  |
// |   train       | a 3x3 filter (conv_pool_trainable), the indices read by the backward,  |
// |               | becomes conv_relu_max_pool_indices,                                    |
// |               | and the masked scatter + weight gradient behind it one                 |
// |               | conv_relu_max_pool_weight_grad: neither the convolution's output nor   |
// |               | its gradient is stored. Bit-identical (eager first layers share the   |
// |               | kernels' sums)                                                         |
// | norm_add      | a layer_norm_backward whose dx only an add reads becomes               |
// |               | layer_norm_backward_add: the residual gradient is added as dx is made  |
// | fuse          | turns groups of element-wise nodes (add, mul, div, neg, comparisons,   |
// |               | bool -> float) whose intermediates nothing else reads into one         |
// |               | fused_pointwise node: ReLU's backward mask-and-multiply is one kernel  |
// | dce           | removes nodes none of whose results reach an output, a gradient, or a  |
// |               | later live node; keeps every in-place write and every random draw      |
// | remat         | training graphs: recomputes activations where the backward reads them  |
// |               | instead of keeping them alive from the forward. Without a budget only  |
// |               | what costs one pass over the data and no memory elsewhere, where it    |
// |               | lowers the peak (rematerialize_free: W4's GELUs, layer norms); with a  |
// |               | budget (PassOptions::memory_budget) then cheap ones (element-wise,     |
// |               | layer_norm, softmax, dropout from its seed), then chains through       |
// |               | matrix products, until the arena fits it (rematerialize)               |
// | gelu_pair     | training graphs, after remat: a GELU the backward recomputes and its   |
// |               | gradient become one gelu_with_backward (ops/activations.h): x read and |
// |               | Phi(x) computed once for both; its readers in between move below it.   |
// |               | Bit-identical                                                          |
// | sink          | training graphs: moves a node whose results nothing reads until after  |
// |               | the arena's peak down to their first reader (sink_producers)           |
// | interop       | last: pairs independent nodes to run at the same time, one thread each, |
// |               | where the cost model predicts a gain, and moves each pair's nodes next  |
// |               | to each other (schedule_interop, graph/interop.h); the report's         |
// |               | `interop` lists the pairs for the memory plan and the executor. On a    |
// |               | training graph no pair may grow the arena (InteropOptions::max_arena)   |
//
// No pass reorders writes: a node that writes memory (an optimizer update, add_) stays, in its
// place relative to every node that reads or writes the same buffer.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "athanor/graph/graph.h"
#include "athanor/graph/interop.h"
#include "athanor/graph/memory_plan.h"

namespace ath::graph {

int fold_constants(Graph& g);
int simplify(Graph& g);
int eliminate_common_subexpressions(Graph& g);
// Inference only (PassOptions::inference): see the table above.
int fuse_matmul_linear(Graph& g);
int fuse_gelu(Graph& g);
int fuse_attention_softmax(Graph& g);
int convert_attention_heads(Graph& g);
int fuse_self_attention(Graph& g);
int convert_selects_to_views(Graph& g);
int fuse_log_softmax_nll(Graph& g);
int fuse_epilogues(Graph& g);
// Inference only (PassOptions::inference): see the table above.
int fold_batch_norms(Graph& g);
int fuse_conv_pools(Graph& g);
int convert_to_blocked_layout(Graph& g);
int pack_linears(Graph& g);
int fuse_pool_masks(Graph& g);
int fuse_conv_pools_for_training(Graph& g);
int fuse_gelu_pairs(Graph& g);
int fuse_norm_adds(Graph& g);
int fuse_pointwise(Graph& g);
int eliminate_dead_code(Graph& g);

struct RematReport {
  int64_t arena_before = 0, arena_after = 0;
  std::vector<Recomputation> recomputed;  // in the order chosen
  bool met(int64_t budget) const { return arena_after <= budget; }
};
// Rematerialization: while the planned arena exceeds `arena_budget` bytes, takes the buffer live
// across the arena's peak with the most bytes per recomputed work that nodes without side
// effects made, never written in place, and that can be recomputed at its first read after the
// peak from values still there (through up to four producers; cheap producers are preferred,
// matrix products only when no cheap candidate is left); moves its computation there (a copy
// of the chain, and of the views the reads go through), so the original dies before the peak. Stops
// when the arena fits or nothing at the peak qualifies (the report says how far it got). Results
// are bit-identical: the copy runs the same kernel on the same inputs.
RematReport rematerialize(Graph& g, int64_t arena_budget);
// Rematerialization that costs neither a budget nor memory elsewhere (what "remat" runs first):
// while a buffer live across the arena's peak was made by a cheap node (one pass over the data:
// element-wise ops, layer_norm, softmaxes) whose inputs are all still live at the buffer's first
// read after the peak, recomputes it there — kept only when the arena, or the most bytes live
// at once, comes down. W4's GELU outputs: the GELU's input is saved for its backward anyway.
RematReport rematerialize_free(Graph& g);
// Memory-aware scheduling ("sink", training graphs): while a buffer live across the arena's
// peak was made by a node without side effects whose results nothing but views reads before the
// peak, moves that node (and those views) down to just before its first reader — kept only when
// the arena, or the most bytes live at once, comes down. Returns the number of moves.
int sink_producers(Graph& g);

// Whether a node must run even if nothing reads its results: it writes memory, or it draws
// from a random generator (philox_seed_offset advances the generator's state).
bool has_side_effects(const Node& n);

// Rebuilds `g` keeping the nodes marked in `keep`, with every use of a value v replaced by
// replace[v] (kNoValue: keep v), and values nothing defines or references dropped; renumbers.
void rewrite(Graph& g, const std::vector<bool>& keep, const std::vector<ValueId>& replace);
// Moves the nodes to `order` (new position -> old index; a permutation that keeps every
// must_follow order), renumbering Value::node. Values keep their ids.
void reorder_nodes(Graph& g, const std::vector<int32_t>& order);

struct PassOptions {
  std::vector<std::string> disabled;  // pass names to skip
  // Also run the inference-only passes (blocked_layout): the graph computes no gradients and its
  // constants are final (an inference session's), so weights may be repacked.
  bool inference = false;
  bool verify = true;  // run the verifier after each pass
  // Bytes the memory plan's arena may use; > 0: "remat" recomputes until the arena fits (see
  // rematerialize), after what it recomputes anyway (rematerialize_free).
  int64_t memory_budget = 0;
  // The inter-op schedule's cost model and window ("interop").
  InteropOptions interop;
  // Called after each pass that ran (a debug dump writes the graph here).
  std::function<void(std::string_view pass, const Graph& g)> after_each;
};

struct PassReport {
  struct Entry {
    std::string name;
    int changed = 0;
    int nodes_after = 0;
  };
  int nodes_before = 0;
  std::vector<Entry> passes;
  RematReport remat;        // when "remat" ran
  InteropSchedule interop;  // the pairs "interop" chose (none when it did not run)
};

// The passes' names, in the order run_passes runs them.
const std::vector<std::string>& pass_names();
// Runs the enabled passes in order; throws ValueError for an unknown name in `disabled`.
PassReport run_passes(Graph& g, const PassOptions& options = {});

}  // namespace ath::graph
