// InferenceSession: loads an ONNX model and runs it on athanor's graph IR, passes and executor —
// the kernels training uses, no second set.
//
//   #include "athanor/onnx/session.h"
//   const std::string data = "/usr/share/libonnx-testdata/data/node/";  // libonnx-testdata
//   onnx::InferenceSession session(data + "test_relu/model.onnx", {.threads = 2});
//   Tensor x = randn({3, 4, 5});
//   std::vector<Tensor> y = session.run({{"x", x}});   // outputs in the model's order
//   assert(allclose(y[0], relu(x)));
//
// How it runs:
// - Load (the constructor) parses the file, decodes the initializers (external data files are
//   resolved relative to the model's directory), checks the graph and fails with a FormatError
//   naming the file and node for a malformed one (a value read but never defined, a cycle, a
//   bad initializer), or a NotImplementedError listing every node whose op, opset or element
//   type is not supported, as `OpType(opset N) dtype node 'name'`.
// - The first run for a new key — the inputs' shapes and dtypes, plus the values of inputs that
//   steer shapes (an input read as Reshape's shape, say) — runs the model eagerly under the
//   graph tracer: computations on constants and shapes (Shape -> Gather -> Concat -> Reshape)
//   are evaluated then and become constants, the rest is recorded as registry ops. The graph
//   then goes through the compiler's passes (fold, simplify, cse, epilogue, fuse, dce), a memory
//   plan and an executor; later runs with that key replay it. A model whose run needs a value
//   on the host mid-way (data-dependent shapes) runs eagerly for that key, with a diagnostic.
// - run() checks every input against the model's declaration: an unknown or missing name, a
//   wrong dtype, rank or fixed dimension throws a ValueError naming the input and its expected
//   type ("float32[N,3,224,224]", symbolic dimensions by name).
// - With SessionOptions::plan_path, the graphs built are saved, and a later session (another
//   process) loads them instead of tracing and optimizing again.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "athanor/tensor/tensor.h"

namespace ath::graph {
class Graph;
class Executor;
}  // namespace ath::graph

namespace ath::onnx {

// How a batch may run (SessionOptions::batch_parallel).
enum class BatchParallel : uint8_t {
  Off,   // the whole batch as one, every node on all the threads
  Auto,  // streams where they prove faster on the first call's input (both ways timed)
  On,    // streams wherever the graph allows them
};

struct SessionOptions {
  // Intra-op threads while run() runs (the caller's count after); 0: the count when the session
  // is made, kept for its life.
  int threads = 0;
  bool optimize = true;                     // false: record and replay without passes
  std::vector<std::string> disable_passes;  // graph::pass_names() to skip
  bool arena = true;                        // replays use one memory-plan arena per key
  // Run independent nodes at the same time, one thread each, where the compiler's cost model
  // (calibrated on this machine once per process) predicts a gain (graph/interop.h). Off: nodes
  // run one after another, each with all `threads` (ONNX Runtime's "sequential").
  bool inter_op = false;
  // A saved optimized plan (empty: none), like ONNX Runtime's optimized_model_filepath or
  // OpenVINO's model cache. When the file exists and was made for this model, this athanor
  // build, CPU ISA, oneDNN and these options, the constructor loads its graphs — one per input
  // key, after the passes, weights packed — and those keys replay at once, without tracing or
  // optimizing. A plan that does not match, or fails any check (checksums, the graph verifier,
  // every node's shape rule), is ignored with a line in stats().diagnostics. Each time run()
  // builds a graph for a new key, the file is rewritten (atomically) with every cached one.
  std::string plan_path;
  // Batch-parallel streams (OpenVINO's throughput streams, chosen per input shape): where the
  // graph provably computes each sample apart from the others (graph/batch_split.h) and the
  // batch divides into `threads` equal shares, each thread runs one share from start to finish
  // on a graph built for one thread — no fork and join per node, each core's activations in
  // its own cache. Auto keeps them where the first call for a shape measures them >= 5% faster
  // (that first call pays a second trace and a few timed runs) and whose first eager run took
  // under 50 ms. A saved plan stores whole-batch graphs: with plan_path, Auto runs whole (so the
  // saving and the loading sessions compute the same bits) and On streams only keys it traced.
  BatchParallel batch_parallel = BatchParallel::Auto;
};

// A declared input or output: dims are -1 where symbolic or unknown (dim_names says which name).
struct TensorInfo {
  std::string name;
  DType dtype = kFloat32;
  bool dtype_known = true;
  std::vector<int64_t> dims;
  std::vector<std::string> dim_names;
  bool rank_known = true;
  // "float32[N,3,224,224]"
  std::string type_string() const;
};

struct SessionStats {
  int64_t runs = 0;
  int64_t traces = 0;              // runs that built a graph
  int64_t replays = 0;             // runs that replayed one
  int64_t eager_runs = 0;          // runs of keys that cannot be recorded
  int64_t plan_graphs_loaded = 0;  // keys the constructor read from SessionOptions::plan_path
  int64_t plan_writes = 0;         // times run() rewrote the plan
  int64_t stream_runs = 0;         // replays that ran as batch-parallel streams
  std::vector<std::string> diagnostics;
};

namespace detail {
struct LoadedModel;
}

class InferenceSession {
 public:
  explicit InferenceSession(const std::string& path, SessionOptions options = {});
  ~InferenceSession();
  InferenceSession(const InferenceSession&) = delete;
  InferenceSession& operator=(const InferenceSession&) = delete;

  // Runs the model on named inputs; returns the outputs in the model's order.
  std::vector<Tensor> run(const std::vector<std::pair<std::string, Tensor>>& inputs);

  const std::vector<TensorInfo>& inputs() const;
  const std::vector<TensorInfo>& outputs() const;
  int opset() const;
  const SessionStats& stats() const { return stats_; }
  // The optimized graph the last run replayed or built; null after an eager run or before any.
  const graph::Graph* last_graph() const { return last_graph_; }
  // The executor of that graph (its per-node profile: Executor::set_profiling); null likewise,
  // and when the key runs as batch-parallel streams (each stream has its own).
  const graph::Executor* last_executor() const { return last_executor_; }

 private:
  struct Compiled;
  // The memory plan, executor and output flags of a graph built or loaded.
  void prepare(Compiled& c) const;
  // Runs the model eagerly under the tracer, then optimizes and prepares what it recorded
  // (`failure` says why a run cannot be recorded; the outputs are the eager run's).
  std::unique_ptr<Compiled> trace(const std::vector<Tensor>& inputs,
                                  const std::vector<Tensor>& args, bool inter_op,
                                  std::vector<Tensor>& outputs, std::string& failure);
  // SessionOptions::batch_parallel: gives `whole` its streams where allowed (and faster).
  void add_streams(Compiled& whole, const std::vector<Tensor>& inputs,
                   const std::vector<Tensor>& args);
  // SessionOptions::plan_path: the constructor's read, and run()'s rewrite after a new key.
  void load_plan();
  void save_plan();

  std::unique_ptr<detail::LoadedModel> model_;
  SessionOptions options_;
  std::vector<std::pair<std::string, std::unique_ptr<Compiled>>> cache_;
  SessionStats stats_;
  std::string plan_header_;  // JSON: what a saved plan must have been made for (empty: no plan)
  const graph::Graph* last_graph_ = nullptr;
  const graph::Executor* last_executor_ = nullptr;
};

// The names of the ONNX ops the importer supports (default domain), sorted.
std::vector<std::string> supported_ops();

}  // namespace ath::onnx
