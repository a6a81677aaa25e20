// The exporter's passes over a recorded graph, between tracing and writing the file: the
// comparison of the two traces (dynamic_batch), the emission of every live node through the op
// table (nodes on constants are folded into constants), and the graph's inputs, outputs and
// pruning.
#pragma once

#include <string>
#include <vector>

#include "athanor/graph/graph.h"
#include "emit_context.h"

namespace ath::onnx::detail {

// Throws NotImplementedError unless `b` (traced at batch size batch_b) records the same
// computation as `a` (batch_a): same ops, same value numbering, same state tensors, constants
// of the same rank. Attributes and shapes may differ; the emitters read those differences.
void check_same_graph(const graph::Graph& a, const graph::Graph& b, int64_t batch_a,
                      int64_t batch_b);

// Emits every node the outputs depend on. Nodes that cannot be written are all collected into
// one NotImplementedError.
void emit_graph(EmitContext& ctx);

// Declares the inputs and outputs (dims that follow the batch size named "batch") and removes
// the nodes and initializers no output depends on.
void finish_graph(EmitContext& ctx, ::onnx::GraphProto& out,
                  const std::vector<std::string>& input_names,
                  const std::vector<std::string>& output_names, int64_t batch_a);

}  // namespace ath::onnx::detail
