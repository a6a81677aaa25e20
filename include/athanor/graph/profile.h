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
//   // With the machine's GEMM rate and bandwidth: each kernel's distance from its limit.
//   report = graph::profile_report(g, p, 15, {.gemm_flops = 300e9, .bytes_per_s = 30e9});
//   assert(report.find("GFLOP/s") != std::string::npos);
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

// The machine's limits, to say how far each kernel is from its own: matrix products,
// convolutions and attention against the GEMM rate, every node's bytes against the memory
// bandwidth (benchmarks measure both in the same run: bench/bench_host.h).
struct MachineLimits {
  double gemm_flops = 0;   // FLOP/s of a large float32 GEMM on the threads the graph runs on
  double bytes_per_s = 0;  // read bandwidth from memory on those threads
  bool known() const { return gemm_flops > 0 && bytes_per_s > 0; }
};

// A table of time per run by op (total, share, node count), then the `top` costliest nodes with
// their text form. Shares are of run_seconds; the executor's own time is the rest.
// With limits, each op and node also gets its rate: GFLOP/s and the share of the GEMM rate for
// the nodes that compute products (graph::node_work's FLOPs), and GB/s and the share of the
// bandwidth for the bytes every node reads and writes (each input and output once: a floor on
// its traffic). Then the floor of the whole run: every product at the GEMM rate, every other
// node at the bandwidth, and how far the run is above it.
std::string profile_report(const Graph& graph, const NodeProfile& profile, int top = 15,
                           const MachineLimits& limits = {});

}  // namespace ath::graph
