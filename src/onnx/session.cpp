#include "athanor/onnx/session.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "athanor/core/parallel.h"
#include "athanor/graph/batch_split.h"
#include "athanor/graph/executor.h"
#include "athanor/graph/interop.h"
#include "athanor/graph/memory_plan.h"
#include "athanor/graph/passes.h"
#include "athanor/graph/tracer.h"
#include "athanor/tensor/grad_mode.h"
#include "batch_streams.h"
#include "interpreter.h"
#include "model.h"
#include "saved_plan.h"

namespace ath::onnx {

std::string TensorInfo::type_string() const {
  const std::string_view type = dtype_known ? dtype_name(dtype) : std::string_view("?");
  if (!rank_known) return fmt::format("{}[...]", type);
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < dims.size(); ++i)
    parts.push_back(dims[i] >= 0 ? std::to_string(dims[i]) : dim_names[i]);
  return fmt::format("{}[{}]", type, fmt::join(parts, ","));
}

namespace {

// The session's thread count while it runs, the caller's again after: two sessions with their
// own counts can take turns on one thread.
class SessionThreads {
 public:
  explicit SessionThreads(int threads) : saved_(get_num_threads()) {
    if (threads > 0 && threads != saved_) set_num_threads(threads);
  }
  ~SessionThreads() {
    if (get_num_threads() != saved_) set_num_threads(saved_);
  }
  SessionThreads(const SessionThreads&) = delete;
  SessionThreads& operator=(const SessionThreads&) = delete;

 private:
  int saved_;
};

}  // namespace

struct InferenceSession::Compiled {
  detail::PlanEntry saved;  // the key, the optimized graph and its pairs (or why it runs eagerly)
  graph::MemoryPlan plan;
  std::unique_ptr<graph::Executor> executor;
  std::vector<bool> constant_output;  // the graph's own tensor: copied before it is returned
  // Batch-parallel streams chosen for this key (SessionOptions::batch_parallel); null: the
  // whole batch runs as one on `executor`.
  std::unique_ptr<detail::BatchStreams> streams;
  double traced_run_s = 0;  // how long the eager run under the tracer took
  bool eager() const { return saved.eager.has_value(); }
};

namespace {

std::string shape_string(const Tensor& t) { return detail::key_type(t.dtype(), t.shape()); }

// Inference binds no parameters: whatever the tracer kept as state (the initializers the model
// holds) is a constant of the graph, so the fold pass can precompute on it.
void state_to_constants(graph::Graph& g) {
  for (std::size_t s = 0; s < g.state.size(); ++s) {
    graph::Value& v = g.values[static_cast<std::size_t>(g.state[s])];
    v.origin = graph::ValueOrigin::Constant;
    v.index = static_cast<int32_t>(g.constants.size());
    g.constants.push_back(g.state_tensors[s]);
  }
  g.state.clear();
  g.state_tensors.clear();
  g.state_grad_of.clear();
  g.grads.clear();
}

}  // namespace

InferenceSession::InferenceSession(const std::string& path, SessionOptions options)
    : model_(detail::load_model(path, !options.plan_path.empty())), options_(std::move(options)) {
  ATH_CHECK(options_.threads >= 0, ValueError, "{}: SessionOptions::threads must be >= 0, got {}",
            path, options_.threads);
  // 0: the count at construction, kept for the session's life (packed weights and primitives
  // are built for one thread count).
  if (options_.threads == 0) options_.threads = get_num_threads();
  if (!options_.plan_path.empty()) load_plan();
}

void InferenceSession::prepare(Compiled& c) const {
  const graph::Graph& g = c.saved.graph;
  const std::vector<int32_t>& pairs = c.saved.pairs;
  if (options_.arena) {
    c.plan = graph::plan_memory(g, pairs);
    c.executor = std::make_unique<graph::Executor>(g, c.plan, pairs);
  } else {
    c.executor = std::make_unique<graph::Executor>(g, pairs);
  }
  c.constant_output.clear();
  for (graph::ValueId v : g.outputs) {
    const graph::ValueId storage = g.storage_of(v);
    c.constant_output.push_back(
        g.value(v).origin == graph::ValueOrigin::Constant ||
        (storage != graph::kNoValue && g.value(storage).origin == graph::ValueOrigin::Constant));
  }
}

void InferenceSession::load_plan() {
  const std::string& path = options_.plan_path;
  try {
    plan_header_ = detail::plan_header(*model_, options_).dump();
  } catch (const std::exception& e) {
    stats_.diagnostics.push_back(
        fmt::format("{}: no saved plan for this session: {}", options_.plan_path, e.what()));
    return;
  }
  std::error_code missing;
  if (!std::filesystem::exists(path, missing)) return;  // the first session writes it
  try {
    for (detail::PlanEntry& e :
         detail::read_plan(path, nlohmann::json::parse(plan_header_), *model_)) {
      auto c = std::make_unique<Compiled>();
      c->saved = std::move(e);
      if (!c->eager()) prepare(*c);
      std::string key = detail::key_string(c->saved.key);
      bool known = false;
      for (const auto& entry : cache_) known = known || entry.first == key;
      if (!known) cache_.emplace_back(std::move(key), std::move(c));
    }
  } catch (const std::exception& e) {
    cache_.clear();
    stats_.diagnostics.push_back(fmt::format(
        "saved plan not used, graphs are rebuilt and the plan rewritten: {}", e.what()));
    return;
  }
  stats_.plan_graphs_loaded = static_cast<int64_t>(cache_.size());
}

void InferenceSession::save_plan() {
  if (plan_header_.empty()) return;  // the header could not be made: diagnosed at load
  std::vector<const detail::PlanEntry*> entries;
  for (const auto& entry : cache_) entries.push_back(&entry.second->saved);
  std::vector<std::string> notes;
  try {
    detail::write_plan(options_.plan_path, nlohmann::json::parse(plan_header_), entries, notes);
    ++stats_.plan_writes;
  } catch (const std::exception& e) {
    notes.push_back(fmt::format("{}: the plan is not saved: {}", options_.plan_path, e.what()));
  }
  // Each fault once, not at every rewrite.
  for (std::string& note : notes) {
    auto& d = stats_.diagnostics;
    if (std::find(d.begin(), d.end(), note) == d.end()) d.push_back(std::move(note));
  }
}

InferenceSession::~InferenceSession() = default;

const std::vector<TensorInfo>& InferenceSession::inputs() const { return model_->inputs; }
const std::vector<TensorInfo>& InferenceSession::outputs() const { return model_->outputs; }
int InferenceSession::opset() const { return model_->opset; }

std::unique_ptr<InferenceSession::Compiled> InferenceSession::trace(
    const std::vector<Tensor>& inputs, const std::vector<Tensor>& args, bool inter_op,
    std::vector<Tensor>& outputs, std::string& failure) {
  auto compiled = std::make_unique<Compiled>();
  {
    graph::Tracer tracer(args);
    const auto start = std::chrono::steady_clock::now();
    outputs = detail::run_nodes(*model_, inputs);
    compiled->traced_run_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    compiled->saved.graph = tracer.finish(outputs);
    if (!tracer.ok()) failure = tracer.failure();
  }
  if (!failure.empty()) return compiled;
  graph::Graph& g = compiled->saved.graph;
  state_to_constants(g);
  if (options_.optimize) {
    graph::PassOptions passes{.disabled = options_.disable_passes, .inference = true};
    if (inter_op) {
      passes.interop.costs = graph::calibrated_interop_costs();
    } else {
      passes.disabled.emplace_back("interop");
    }
    compiled->saved.pairs = run_passes(g, passes).interop.paired_first();
  }
  prepare(*compiled);
  return compiled;
}

void InferenceSession::add_streams(Compiled& whole, const std::vector<Tensor>& inputs,
                                   const std::vector<Tensor>& args) {
  // One stream per thread, on equal shares of a batch that every input leads with.
  const int n = options_.threads;
  if (n < 2 || args.size() != inputs.size() || inputs.empty()) return;
  const int64_t batch = inputs[0].dim() > 0 ? inputs[0].size(0) : 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    // A model declares the batch it can change: a symbolic first dimension on every input.
    const TensorInfo& d = model_->inputs[i];
    if (inputs[i].dim() == 0 || inputs[i].size(0) != batch || !d.rank_known || d.dims.empty() ||
        d.dims[0] >= 0)
      return;
  }
  if (batch < n || batch % n != 0) return;
  // Auto: streams pay where nodes are too small to split well between threads, so where a run
  // is short; a longer one (ResNet-18 at batch 16: 0.3 s eager) is not worth the first call's
  // second trace and timed runs (it measured no gain).
  // With a saved plan, Auto keeps the whole batch: the plan stores whole-batch graphs, so the
  // session that saves it and the ones that load it compute the same bits.
  constexpr double kAutoMaxTracedRunSeconds = 0.05;
  if (options_.batch_parallel == BatchParallel::Auto &&
      (whole.traced_run_s > kAutoMaxTracedRunSeconds || !options_.plan_path.empty()))
    return;
  if (!graph::batch_coupling(whole.saved.graph, batch).empty()) return;
  // The share's graph, traced, optimized and packed for one thread (the primitives a stream
  // looks up under ThisThreadCount(1)); proved again at its own batch.
  const int64_t rows = batch / n;
  std::vector<Tensor> share;
  for (const Tensor& t : inputs) share.push_back(t.narrow(0, 0, rows).contiguous());
  std::vector<Tensor> share_outputs;
  std::string failure;
  std::unique_ptr<Compiled> one;
  try {
    const SessionThreads single(1);
    one = trace(share, share, /*inter_op=*/false, share_outputs, failure);
  } catch (const Error&) {
    return;  // a shape the model fixes after all (a constant Reshape target): the batch runs whole
  }
  if (!failure.empty() || !graph::batch_coupling(one->saved.graph, rows).empty()) return;
  // The share's plan, as prepare() made it (no pairs: traced without inter_op).
  auto streams = std::make_unique<detail::BatchStreams>(std::move(one->saved.graph),
                                                        std::move(one->plan), n, options_.arena);
  if (options_.batch_parallel == BatchParallel::Auto) {
    // Both ways on this input, after a run each that builds what a first run builds; the
    // fastest of two timed runs each, alternating, so both see the same machine.
    using Clock = std::chrono::steady_clock;
    auto seconds = [](const auto& fn) {
      const auto t0 = Clock::now();
      fn();
      return std::chrono::duration<double>(Clock::now() - t0).count();
    };
    auto run_whole = [&] { whole.executor->run(args); };
    auto run_streams = [&] { streams->run(args); };
    run_whole();
    run_streams();
    double t_whole = 1e30, t_streams = 1e30;
    for (int r = 0; r < 2; ++r) {
      t_whole = std::min(t_whole, seconds(run_whole));
      t_streams = std::min(t_streams, seconds(run_streams));
    }
    if (t_streams > 0.95 * t_whole) return;  // a stream run must win clearly
  }
  whole.streams = std::move(streams);
}

std::vector<Tensor> InferenceSession::run(
    const std::vector<std::pair<std::string, Tensor>>& named) {
  const auto& declared = model_->inputs;
  const std::string file = model_->path.string();
  // 1. Bind by name and check against the declarations.
  std::vector<Tensor> inputs(declared.size());
  for (const auto& [name, t] : named) {
    std::size_t i = 0;
    while (i < declared.size() && declared[i].name != name) ++i;
    if (i == declared.size()) {
      std::string expected;
      for (const auto& d : declared)
        expected += fmt::format("{}{}", expected.empty() ? "" : ", ", d.name);
      ATH_THROW(ValueError, "{}: the model has no input '{}' (its inputs: {})", file, name,
                expected);
    }
    ATH_CHECK(!inputs[i].defined(), ValueError, "{}: input '{}' is given twice", file, name);
    ATH_CHECK(t.defined(), ValueError, "{}: input '{}' is an undefined tensor", file, name);
    const TensorInfo& d = declared[i];
    bool ok = t.dtype() == d.dtype;
    if (d.rank_known) {
      ok = ok && t.dim() == static_cast<int64_t>(d.dims.size());
      for (std::size_t k = 0; ok && k < d.dims.size(); ++k)
        ok = d.dims[k] < 0 || d.dims[k] == t.size(static_cast<int64_t>(k));
    }
    ATH_CHECK(ok, ValueError, "{}: input '{}' expects {}, got {}", file, name, d.type_string(),
              shape_string(t));
    inputs[i] = t.contiguous();
  }
  for (std::size_t i = 0; i < declared.size(); ++i) {
    ATH_CHECK(inputs[i].defined(), ValueError, "{}: input '{}' ({}) is missing", file,
              declared[i].name, declared[i].type_string());
  }
  ++stats_.runs;
  const SessionThreads threads(options_.threads);
  // 2. The cache key: every input's dtype and shape, and the values of value-keyed inputs.
  std::vector<detail::KeyPart> parts;
  std::vector<Tensor> args;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    parts.push_back({.type = shape_string(t), .value = std::nullopt});
    if (model_->value_keyed[i]) {
      parts.back().value = std::string(static_cast<const char*>(t.data_ptr()), t.nbytes());
    } else {
      args.push_back(t);
    }
  }
  std::string key = detail::key_string(parts);
  Compiled* entry = nullptr;
  for (auto& [k, c] : cache_) {
    if (k == key) entry = c.get();
  }
  if (entry != nullptr && !entry->eager()) {
    ++stats_.replays;
    last_graph_ = &entry->saved.graph;
    last_executor_ = entry->streams ? nullptr : entry->executor.get();
    if (entry->streams) ++stats_.stream_runs;
    std::vector<Tensor> outs =
        entry->streams ? entry->streams->run(args) : entry->executor->run(args);
    for (std::size_t i = 0; i < outs.size(); ++i) {
      if (entry->constant_output[i]) outs[i] = outs[i].clone();
    }
    return outs;
  }
  if (entry != nullptr) {
    ++stats_.eager_runs;
    last_graph_ = nullptr;
    last_executor_ = nullptr;
    return detail::run_nodes(*model_, inputs);
  }
  // 3. A new key: run eagerly under the tracer, then optimize and plan what it recorded.
  NoGradGuard no_grad;
  std::vector<Tensor> outputs;
  std::string failure;
  auto compiled = trace(inputs, args, options_.inter_op, outputs, failure);
  ++stats_.traces;
  compiled->saved.key = std::move(parts);
  if (failure.empty()) {
    const graph::Graph& g = compiled->saved.graph;
    // The tensors the tracer bound are the graph's constants now: the caller gets copies.
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      if (compiled->constant_output[i]) outputs[i] = outputs[i].clone();
    }
    if (options_.batch_parallel != BatchParallel::Off) add_streams(*compiled, inputs, args);
    last_graph_ = &g;
    last_executor_ = compiled->streams ? nullptr : compiled->executor.get();
  } else {
    compiled->saved.eager = failure;
    compiled->saved.graph = {};
    last_graph_ = nullptr;
    last_executor_ = nullptr;
    stats_.diagnostics.push_back(
        fmt::format("{}: running eagerly for inputs {}: {}", file, "(this shape)", failure));
  }
  cache_.emplace_back(std::move(key), std::move(compiled));
  if (!options_.plan_path.empty()) save_plan();
  return outputs;
}

}  // namespace ath::onnx
