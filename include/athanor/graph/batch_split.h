// Whether a graph treats the samples of its batch independently, so that the batch can be cut
// into shares run apart (InferenceSession's batch-parallel streams) with the same result.
//
//   #include "athanor/ops/activations.h"
//   #include "athanor/ops/views.h"
//   graph::Graph g;                                          // a batch of 8 samples of 4
//   graph::ValueId x = g.add_argument({{8, 4}, kFloat32});
//   g.outputs.push_back(g.add_node(op_relu(), NoAttrs{}, {x})[0]);
//   assert(graph::batch_coupling(g, 8).empty());             // row i from sample i alone
//   graph::Graph t;                                          // a transpose mixes them
//   graph::ValueId y = t.add_argument({{8, 4}, kFloat32});
//   t.outputs.push_back(t.add_node(op_permute(), PermuteAttrs{.dims = {1, 0}}, {y})[0]);
//   assert(graph::batch_coupling(t, 8).find("permute") != std::string::npos);
//
// The proof is structural and conservative. A value is *per-sample* when it is contiguous and
// its first dimension is a multiple of the batch, sample i's data being the i-th of `batch`
// equal blocks (true of the arguments; kept by reshapes, row-wise ops and pointwise ops). Each
// node must be one of the ops known to map blocks to blocks — pointwise ops whose other operands
// are constants without a batch dimension, reshapes (`view`), and row-wise kernels (linear,
// convolution and pooling in any activation layout, layer_norm, softmax over a later axis,
// self_attention batch-first, index_select of a constant table) — or compute on constants only.
// Anything else (a reduction over the batch, a transpose, a slice, an unknown op) answers why.
#pragma once

#include <cstdint>
#include <string>

#include "athanor/graph/graph.h"

namespace ath::graph {

// Empty when every output's sample i depends only on every argument's sample i (each argument
// having `batch` as its first dimension); otherwise which node, or value, prevents it.
std::string batch_coupling(const Graph& g, int64_t batch);

}  // namespace ath::graph
