// compile(): turns a function of tensors — typically a whole training step, forward, backward and
// optimizer update — into one recorded graph that later calls replay.
//
//   #include "athanor/graph/compile.h"
//   #include "athanor/nn/linear.h"
//   #include "athanor/optim/sgd.h"
//   nn::Linear fc({.in = 4, .out = 2});
//   optim::SGD opt(fc.parameters(), {.lr = 0.1});
//   auto step = compile([&](const Tensor& x, const Tensor& y) {
//     opt.zero_grad();
//     Tensor loss = mse_loss(fc.forward(x), y);
//     loss.backward();
//     opt.step();
//     return loss;
//   });
//   Tensor x = randn({8, 4}), y = randn({8, 2});
//   for (int i = 0; i < 5; ++i) step(x, y);
//   assert(step.stats().replays == 3);          // calls 1 and 2 traced, 3..5 replayed
//
// How a call runs:
// - Cache key: the tensor arguments' shapes, dtypes, strides and devices, the values of the
//   plain (arithmetic) arguments, grad mode, autocast, which modules are in training mode and
//   whether state tensors were replaced since (by an optimizer's load_state_dict; see
//   core/behavior_state.h). Each key keeps its own graph: a smaller last batch or an evaluation
//   step gets its own, and switching back costs nothing.
// - A new key runs eagerly under the tracer (athanor/graph/tracer.h). The graph is used from the
//   third call on, once two consecutive traces recorded the same computation (graph/compare.h);
//   state an optimizer creates on its first step, or a number that changes every call, shows up
//   as a difference instead of being baked in. Values that change every step without changing the
//   graph stay live inputs: the learning rate is read from the optimizer at each replay
//   (ops/attr_source.h), dropout draws a new seed from its generator, the Adam step counter is a
//   tensor the update advances.
// - Before a replay, gradient buffers the step accumulates into are bound to the parameters'
//   current gradients (zero_grad may have replaced them), and guards check that every state
//   tensor still has its shape, dtype, strides and requires_grad flag; a parameter without a
//   gradient, or any change, traces the key again.
// - A step that cannot be traced (a host read such as loss.item() inside the step; a batch whose
//   tensors cannot be enumerated) or whose traces keep differing runs eagerly for that key from
//   then on, after one diagnostic line saying which op and why. It never computes something
//   different.
// - A replay returns tensors without autograd history, and assigns the parameters' `.grad` as the
//   eager step would.
// Contract: whatever the step changes must be changed through registry ops (tensors written in
// place, `.grad` by the autograd engine); the objects it uses (modules, optimizer) must outlive
// the compiled function.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "athanor/data/batch.h"
#include "athanor/graph/executor.h"
#include "athanor/graph/graph.h"
#include "athanor/graph/memory_plan.h"
#include "athanor/graph/passes.h"

namespace ath {

struct CompileOptions {
  std::vector<std::string> disable_passes;  // graph::pass_names(): "fold", "cse", "dce"
  bool verify = true;                       // run the graph verifier after every pass
  // Replays place every planned buffer (activations, saved tensors, kernel workspaces) in the
  // memory plan's arena, allocated once per graph; false allocates them as eager execution
  // does (through the caching allocator).
  bool arena = true;
  // Bytes the arena may use (activations, saved tensors, workspaces; not parameters, gradients
  // or optimizer state). When the plan needs more, the "remat" pass recomputes activations in
  // the backward instead of saving them — cheap ones first, then short chains through matrix
  // products (graph::rematerialize; the plan's `recomputed` lists them). 0: no budget (the pass
  // still recomputes what costs no memory elsewhere: graph::rematerialize_free). A budget it
  // cannot reach trains anyway, with a diagnostic.
  int64_t memory_budget = 0;
  // The inter-op schedule's cost model (graph/interop.h): which independent nodes run at the
  // same time, one thread each. Unset: this machine's rates, measured once per process
  // (graph::calibrated_interop_costs). Switch the schedule off with disable_passes = {"interop"}.
  std::optional<graph::InteropCosts> interop_costs;
  // Consecutive traces of one key that disagree before the key runs eagerly for good.
  int max_unstable_traces = 4;
  // Where to write each compiled graph (after tracing and after each pass, as text and
  // Graphviz); the environment variable ATH_COMPILE_DEBUG sets it too. Empty: nowhere.
  std::string debug_dir;
  // Receives the one-line diagnostics (fallbacks); default: printed to stderr.
  std::function<void(const std::string&)> on_diagnostic;
  // During a replay: called with each parameter as soon as the graph has made its gradient
  // (grad() holds it; graph::Executor::set_gradient_ready). What a post-accumulate hook sees in
  // an eager backward, for code that must act per gradient while the backward still runs — a
  // data-parallel strategy's all-reduces. Not called while a call runs eagerly (its hooks run).
  std::function<void(const Tensor& parameter)> on_gradient_ready;
};

struct CompileStats {
  int64_t calls = 0;
  int64_t replays = 0;
  int64_t traces = 0;
  int64_t eager_calls = 0;   // calls of keys that fell back to eager
  int64_t graphs = 0;        // graphs compiled
  double trace_seconds = 0;  // tracing, including the eager run it records
  double pass_seconds = 0;   // passes and executor preparation
  std::vector<std::string> diagnostics;
};

namespace graph {

// The type-erased core behind compile(): cache, guards, trace and replay.
class CompiledStep {
 public:
  explicit CompiledStep(CompileOptions options);
  ~CompiledStep();
  CompiledStep(CompiledStep&&) noexcept;
  CompiledStep& operator=(CompiledStep&&) noexcept;

  struct Result {
    std::vector<Tensor> outputs;
    bool replayed = false;
  };
  // `eager` runs the user's function and returns what it returned, flattened; `bindable` is
  // false when the arguments hold tensors that cannot be enumerated (the call then runs
  // eagerly, with a diagnostic naming `why`).
  Result call(std::span<const Tensor> args, uint64_t plain_key,
              const std::function<std::vector<Tensor>()>& eager, const std::string& unbindable);
  const CompileStats& stats() const;
  // The optimized graph of the last call that traced into a ready graph or replayed one.
  const Graph* last_graph() const;
  const PassReport* last_report() const;
  const MemoryPlan* last_memory_plan() const;
  const Executor* last_executor() const;
  // Frees every graph's arena until its next replay (Executor::release_arena).
  void release_memory();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// How compile() finds the tensors of an argument. Overload for your own types (found by
// argument-dependent lookup): push the tensors to `out`, mix any plain values into `key`.
inline void collect_argument(const Tensor& t, std::vector<Tensor>& out, uint64_t&, std::string&) {
  out.push_back(t);
}
inline void collect_argument(const std::vector<Tensor>& v, std::vector<Tensor>& out, uint64_t& key,
                             std::string&) {
  key = key * 1000003u + v.size();
  out.insert(out.end(), v.begin(), v.end());
}
// A Batch of the default collate (a TensorList); any other batch type runs eagerly.
inline void collect_argument(const data::Batch& b, std::vector<Tensor>& out, uint64_t& key,
                             std::string& unbindable) {
  key = key * 1000003u + static_cast<uint64_t>(b.size());
  if (b.holds<data::TensorList>()) {
    collect_argument(b.as<data::TensorList>(), out, key, unbindable);
  } else if (unbindable.empty()) {
    unbindable = "the batch is not a TensorList, so its tensors cannot be bound to a graph";
  }
}
template <class T>
requires std::is_arithmetic_v<T> || std::is_enum_v<T>
void collect_argument(T value, std::vector<Tensor>&, uint64_t& key, std::string&) {
  key = key * 1000003u + std::hash<T>()(value);
}

template <class R>
std::vector<Tensor> flatten_result(const R& r) {
  if constexpr (std::is_same_v<R, Tensor>) {
    return {r};
  } else if constexpr (std::is_same_v<R, std::vector<Tensor>>) {
    return r;
  } else {
    static_assert(std::is_same_v<R, Tensor>,
                  "compile(): the step must return void, a Tensor or "
                  "a std::vector<Tensor>");
  }
}
template <class R>
R unflatten_result(std::vector<Tensor>&& outputs) {
  if constexpr (std::is_same_v<R, Tensor>) {
    return std::move(outputs[0]);
  } else {
    return std::move(outputs);
  }
}

}  // namespace graph

template <class F>
class Compiled {
 public:
  Compiled(F fn, CompileOptions options) : fn_(std::move(fn)), core_(std::move(options)) {}

  template <class... Args>
  auto operator()(Args&&... args) {
    using R = std::invoke_result_t<F&, Args&...>;
    std::vector<Tensor> tensors;
    uint64_t key = 0x5eed;
    std::string unbindable;
    (graph::collect_argument(args, tensors, key, unbindable), ...);
    if constexpr (std::is_void_v<R>) {
      core_.call(
          tensors, key,
          [&] {
            fn_(args...);
            return std::vector<Tensor>{};
          },
          unbindable);
    } else {
      std::optional<R> eager_result;
      auto result = core_.call(
          tensors, key,
          [&] {
            eager_result.emplace(fn_(args...));
            return graph::flatten_result(*eager_result);
          },
          unbindable);
      if (eager_result.has_value()) return R(std::move(*eager_result));
      return graph::unflatten_result<R>(std::move(result.outputs));
    }
  }

  const CompileStats& stats() const { return core_.stats(); }
  // The graph the last replay ran (after the passes), or null before the first is ready.
  const graph::Graph* graph() const { return core_.last_graph(); }
  const graph::PassReport* pass_report() const { return core_.last_report(); }
  // That graph's memory plan (graph/memory_plan.h): bytes by category and the arena's peak.
  const graph::MemoryPlan* memory_plan() const { return core_.last_memory_plan(); }
  // The executor that ran that graph: its arena and what its last run allocated.
  const graph::Executor* executor() const { return core_.last_executor(); }
  // Frees the arenas of this function's graphs until their next replay: before an evaluation
  // that needs the memory, for instance (the next replay allocates again, once).
  void release_memory() { core_.release_memory(); }

 private:
  F fn_;
  graph::CompiledStep core_;
};

template <class F>
Compiled<std::decay_t<F>> compile(F&& fn, CompileOptions options = {}) {
  return Compiled<std::decay_t<F>>(std::forward<F>(fn), std::move(options));
}

}  // namespace ath
