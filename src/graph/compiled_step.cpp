// CompiledStep: the cache, guards and trace/replay protocol behind compile() (compile.h explains
// the protocol to users; this file implements it).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "athanor/core/allocator.h"
#include "athanor/core/behavior_state.h"
#include "athanor/graph/compare.h"
#include "athanor/graph/compile.h"
#include "athanor/graph/debug_page.h"
#include "athanor/graph/executor.h"
#include "athanor/graph/memory_plan.h"
#include "athanor/graph/tracer.h"
#include "athanor/ops/dispatch.h"
#include "athanor/tensor/grad_mode.h"

namespace ath::graph {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The cache key: everything a call's arguments and the thread's modes contribute, as words.
using Key = std::vector<int64_t>;

Key make_key(std::span<const Tensor> args, uint64_t plain_key) {
  Key key{static_cast<int64_t>(plain_key), GradMode::is_enabled() ? 1 : 0,
          detail::t_autocast ? static_cast<int64_t>(*detail::t_autocast) : -1,
          static_cast<int64_t>(behavior_fingerprint())};
  for (const Tensor& a : args) {
    ATH_CHECK(a.defined(), ValueError, "compile: a tensor argument is undefined");
    key.push_back(static_cast<int64_t>(a.dtype()));
    key.push_back(static_cast<int64_t>(a.device().type) * 65536 + a.device().index);
    key.push_back(a.dim());
    key.insert(key.end(), a.shape().begin(), a.shape().end());
    key.insert(key.end(), a.strides().begin(), a.strides().end());
  }
  return key;
}

// A graph ready to replay, with what its guards check.
struct Prepared {
  Graph graph;
  PassReport report;
  MemoryPlan memory;
  std::unique_ptr<Executor> executor;
  std::vector<bool> requires_grad;                   // per state slot
  std::vector<std::pair<int32_t, int32_t>> grad_of;  // {parameter slot, its gradient's slot}
};

struct Entry {
  std::optional<Graph> candidate;  // the last trace, waiting for an equal one
  std::unique_ptr<Prepared> ready;
  int unstable = 0;
  bool eager = false;  // fell back for good
};

// Binds each gradient slot to its parameter's current `.grad`, then checks every state tensor
// still has what the graph was recorded with.
bool bind_and_check(Prepared& p) {
  Graph& g = p.graph;
  for (const auto& [param, grad] : p.grad_of) {
    const Tensor current = g.state_tensors[static_cast<std::size_t>(param)].grad();
    if (!current.defined()) return false;
    g.state_tensors[static_cast<std::size_t>(grad)] = current;
  }
  for (std::size_t s = 0; s < g.state.size(); ++s) {
    const Tensor& t = g.state_tensors[s];
    const Value& v = g.value(g.state[s]);
    if (t.shape() != v.meta.shape || t.dtype() != v.meta.dtype || t.strides() != v.strides ||
        t.requires_grad() != p.requires_grad[s])
      return false;
  }
  return true;
}

}  // namespace

struct CompiledStep::Impl {
  CompileOptions options;
  CompileStats stats;
  std::map<Key, Entry> entries;
  const Prepared* last = nullptr;
  int dumps = 0;
  std::vector<std::pair<std::string, std::string>> stages;  // this graph's dumps, for the page

  void diagnose(const std::string& line) {
    stats.diagnostics.push_back(line);
    if (options.on_diagnostic) {
      options.on_diagnostic(line);
    } else {
      std::fprintf(stderr, "athanor compile: %s\n", line.c_str());
    }
  }

  void dump(std::string_view stage, const Graph& g) {
    if (options.debug_dir.empty()) return;
    namespace fs = std::filesystem;
    const fs::path dir = fs::path(options.debug_dir) / fmt::format("graph{}", dumps);
    fs::create_directories(dir);
    stages.emplace_back(std::string(stage), g.to_text());
    std::ofstream(dir / fmt::format("{}.txt", stage)) << stages.back().second;
    std::ofstream(dir / fmt::format("{}.dot", stage)) << g.to_dot();
  }

  std::unique_ptr<Prepared> prepare(Graph g) {
    const auto t0 = Clock::now();
    auto p = std::make_unique<Prepared>();
    for (std::size_t s = 0; s < g.state.size(); ++s) {
      const Tensor& t = g.state_tensors[s];
      p->requires_grad.push_back(t.requires_grad());
      // A gradient buffer the step reads (accumulates into) must still be the parameter's.
      const Tensor grad = t.requires_grad() ? t.grad() : Tensor();
      if (!grad.defined()) continue;
      for (std::size_t q = 0; q < g.state.size(); ++q) {
        if (g.state_tensors[q].impl() == grad.impl())
          p->grad_of.emplace_back(static_cast<int32_t>(s), static_cast<int32_t>(q));
      }
    }
    dump("0_traced", g);
    PassOptions pass_options{.disabled = options.disable_passes,
                             .verify = options.verify,
                             .memory_budget = options.memory_budget};
    // What the caching allocator kept from the eager runs (the warm-up and the traces) is what
    // the arena will replace: handed back before the passes and the calibration allocate, so
    // that the process never holds both (the executor hands back again when it allocates).
    if (options.arena) empty_cache();
    // The machine's rates are measured (once per process) only if the schedule will use them.
    const auto& off = options.disable_passes;
    if (options.interop_costs) {
      pass_options.interop.costs = *options.interop_costs;
    } else if (std::find(off.begin(), off.end(), "interop") == off.end()) {
      pass_options.interop.costs = calibrated_interop_costs();
    }
    int stage = 1;
    pass_options.after_each = [&](std::string_view pass, const Graph& after) {
      dump(fmt::format("{}_{}", stage++, pass), after);
    };
    p->report = run_passes(g, pass_options);
    const std::vector<int32_t> pairs = p->report.interop.paired_first();
    p->memory = plan_memory(g, pairs);
    p->memory.recomputed = p->report.remat.recomputed;
    if (options.memory_budget > 0 && p->memory.arena_bytes > options.memory_budget) {
      diagnose(
          fmt::format("memory budget: the arena needs {} bytes, over the budget of {} ({} "
                      "before recomputing {} values); nothing else live at its peak can be "
                      "recomputed from what is still there",
                      p->memory.arena_bytes, options.memory_budget, p->report.remat.arena_before,
                      p->report.remat.recomputed.size()));
    }
    if (options.verify) check_plan(g, p->memory);
    if (!options.debug_dir.empty()) {
      const auto dir = std::filesystem::path(options.debug_dir) / fmt::format("graph{}", dumps);
      std::ofstream(dir / "memory_plan.txt") << p->memory.report(&g);
      std::ofstream(dir / "interop.txt") << p->report.interop.report(g);
      std::ofstream(dir / "index.html") << debug_page(g, p->report, p->memory, stages);
      stages.clear();
    }
    ++dumps;
    p->graph = std::move(g);
    p->executor = options.arena ? std::make_unique<Executor>(p->graph, p->memory, pairs)
                                : std::make_unique<Executor>(p->graph, pairs);
    if (options.on_gradient_ready) p->executor->set_gradient_ready(options.on_gradient_ready);
    ++stats.graphs;
    stats.pass_seconds += seconds_since(t0);
    return p;
  }
};

CompiledStep::CompiledStep(CompileOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  if (impl_->options.debug_dir.empty()) {
    if (const char* dir = std::getenv("ATH_COMPILE_DEBUG")) impl_->options.debug_dir = dir;
  }
  // Unknown pass names fail here, at compile(), not at the first replay.
  Graph empty_graph;
  run_passes(empty_graph, {.disabled = impl_->options.disable_passes});
}
CompiledStep::~CompiledStep() = default;
CompiledStep::CompiledStep(CompiledStep&&) noexcept = default;
CompiledStep& CompiledStep::operator=(CompiledStep&&) noexcept = default;

const CompileStats& CompiledStep::stats() const { return impl_->stats; }
const Graph* CompiledStep::last_graph() const {
  return impl_->last ? &impl_->last->graph : nullptr;
}
const MemoryPlan* CompiledStep::last_memory_plan() const {
  return impl_->last ? &impl_->last->memory : nullptr;
}
const Executor* CompiledStep::last_executor() const {
  return impl_->last ? impl_->last->executor.get() : nullptr;
}
void CompiledStep::release_memory() {
  for (auto& [key, entry] : impl_->entries)
    if (entry.ready) entry.ready->executor->release_arena();
}
const PassReport* CompiledStep::last_report() const {
  return impl_->last ? &impl_->last->report : nullptr;
}

CompiledStep::Result CompiledStep::call(std::span<const Tensor> args, uint64_t plain_key,
                                        const std::function<std::vector<Tensor>()>& eager,
                                        const std::string& unbindable) {
  Impl& s = *impl_;
  ++s.stats.calls;
  Entry& e = s.entries[make_key(args, plain_key)];
  if (!e.eager && !unbindable.empty()) {
    e.eager = true;
    s.diagnose("running eagerly: " + unbindable);
  }
  if (e.eager) {
    ++s.stats.eager_calls;
    return {eager(), false};
  }
  if (e.ready && bind_and_check(*e.ready)) {
    ++s.stats.replays;
    s.last = e.ready.get();
    return {e.ready->executor->run(args), true};
  }
  e.ready.reset();  // guards failed (or nothing ready yet): trace again

  const auto t0 = Clock::now();
  std::vector<Tensor> outputs;
  std::optional<Graph> traced;
  std::string failure;
  {
    // A traced step runs eagerly, once or twice, before the arena replaces its memory: the
    // cache may not hold more than the step's peak of live bytes meanwhile, so the traces do
    // not raise the process's peak to live bytes plus the slack of a cache warmed on them.
    std::optional<PeakBoundedCache> bounded;
    if (s.options.arena) bounded.emplace();
    Tracer tracer(args);
    outputs = eager();
    Graph g = tracer.finish(outputs);
    if (tracer.ok()) {
      traced.emplace(std::move(g));
    } else {
      failure = tracer.failure();
    }
  }
  ++s.stats.traces;
  s.stats.trace_seconds += seconds_since(t0);
  if (!traced) {
    e.eager = true;
    s.diagnose("running eagerly: " + failure);
    return {std::move(outputs), false};
  }
  if (e.candidate) {
    const std::string difference = first_difference(*e.candidate, *traced);
    if (difference.empty()) {
      e.candidate.reset();
      e.unstable = 0;
      e.ready = s.prepare(std::move(*traced));
      s.last = e.ready.get();
      return {std::move(outputs), false};
    }
    if (++e.unstable >= s.options.max_unstable_traces) {
      e.eager = true;
      e.candidate.reset();
      s.diagnose(fmt::format("running eagerly: {} traces in a row differ; the last two: {}",
                             e.unstable + 1, difference));
      return {std::move(outputs), false};
    }
  }
  e.candidate = std::move(traced);
  return {std::move(outputs), false};
}

}  // namespace ath::graph
