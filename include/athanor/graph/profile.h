// Where a graph's time goes: per-node wall time accumulated over an executor's runs, and a
// report of it by op and by node (what ONNX Runtime's and TensorRT's profilers print).
//
//   #include "athanor/graph/executor.h"
//   #include "athanor/graph/profile.h"
//   #include "athanor/graph/tracer.h"
//   Tensor x = randn({64, 32}), w = randn({32, 16});
//   graph::Tracer tracer({x});
//   graph::Graph g = tracer.finish({relu(matmul(x, w))});
//   graph::Executor exec(g);
//   exec.set_profiling(true);
//   for (int i = 0; i < 3; ++i) exec.run({x});
//   const graph::NodeProfile& p = exec.profile();
//   assert(p.runs == 3 && p.seconds.size() == g.nodes.size());
//   std::string report = graph::profile_report(g, p);  // per op, then the costliest nodes
//   assert(report.find("relu") != std::string::npos);
//
// Timing is per node, around its kernel call, on the calling thread: a pair of nodes run at the
// same time (graph/interop.h) is one interval, charged to its first node and counted as a pair.
// Profiling costs two clock reads per node (~50 ns); off, nothing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "athanor/graph/graph.h"

namespace ath::graph {

struct NodeProfile {
  std::vector<double> seconds;  // per node: wall time summed over the profiled runs
  std::vector<bool> paired;     // per node: ran as the first of a pair (its partner's time in it)
  int64_t runs = 0;             // profiled runs
  double run_seconds = 0;       // the runs' wall time, start to end (nodes plus the executor's own)
};

// Time per run by op (a pair counted under its first node's op, as "op (pair)"), costliest first.
struct OpTime {
  std::string op;
  double seconds_per_run = 0;
  int nodes = 0;
};
std::vector<OpTime> profile_by_op(const Graph& graph, const NodeProfile& profile);

// A table of time per run by op (total, share, node count), then the `top` costliest nodes with
// their text form. Shares are of run_seconds; the executor's own time is the rest.
std::string profile_report(const Graph& graph, const NodeProfile& profile, int top = 15);

}  // namespace ath::graph
