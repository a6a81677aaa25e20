// Batch-parallel streams (SessionOptions::batch_parallel): a batch cut into equal shares, each
// run start to finish by one thread on a graph traced for one share and one thread — OpenVINO's
// throughput streams, inside one call. Against one graph for the whole batch on all threads,
// no node forks and joins, and each core keeps its own share's activations in its own cache;
// it pays where a model's layers are too small to split well between threads (W2's CNN at
// batch 64: its convolutions and pools). graph::batch_coupling proves the shares independent.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "athanor/graph/executor.h"
#include "athanor/graph/graph.h"
#include "athanor/graph/memory_plan.h"
#include "athanor/tensor/tensor.h"

namespace ath::onnx::detail {

struct BatchStreams {
  graph::Graph graph;  // one share's graph, optimized with primitives and packing for one thread
  graph::MemoryPlan plan;
  std::vector<std::unique_ptr<graph::Executor>> executors;  // one per stream: its own arena

  // `count` executors of `share_graph`, each with its own arena laid out by `plan` (the share's
  // plan_memory, made when it was prepared; an empty plan: no arena).
  BatchStreams(graph::Graph share_graph, graph::MemoryPlan share_plan, int count, bool arena);
  BatchStreams(const BatchStreams&) = delete;  // the executors refer to `graph`
  BatchStreams& operator=(const BatchStreams&) = delete;
  int count() const { return static_cast<int>(executors.size()); }
  // Runs share i of every argument (rows [i * n / count, (i + 1) * n / count)) on thread i of
  // one parallel region, each thread counting as one (ThisThreadCount); returns the graph's
  // outputs for the whole batch (the shares' outputs concatenated along the first dimension).
  std::vector<Tensor> run(std::span<const Tensor> arguments) const;
};

}  // namespace ath::onnx::detail
