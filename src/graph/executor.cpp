#include "athanor/graph/executor.h"

#include <fmt/format.h>

#include <chrono>
#include <limits>

#include "athanor/core/allocator.h"
#include "athanor/core/error.h"
#include "athanor/graph/interop.h"
#include "athanor/ops/creation.h"
#include "athanor/ops/dispatch.h"
#include "athanor/tensor/grad_mode.h"

namespace ath::graph {

namespace {

// Releases the arena for the next run when a run ends, thrown or not.
struct ArenaClaim {
  std::atomic<bool>* busy = nullptr;
  ~ArenaClaim() {
    if (busy != nullptr) busy->store(false, std::memory_order_release);
  }
};

}  // namespace

Executor::Executor(const Graph& graph, std::span<const int32_t> paired_first)
    : graph_(graph),
      release_after_(graph.nodes.size()),
      runs_with_next_(graph.nodes.size()),
      grads_final_after_(graph.nodes.size()) {
  for (int32_t k : paired_first) {
    ATH_CHECK(k >= 0 && static_cast<std::size_t>(k) + 1 < graph.nodes.size() &&
                  (k == 0 || !runs_with_next_[static_cast<std::size_t>(k) - 1]),
              ValueError, "graph executor: cannot pair node {} with the next", k);
    runs_with_next_[static_cast<std::size_t>(k)] = true;
  }
  constexpr int kKeep = std::numeric_limits<int>::max();
  std::vector<int> last_use(graph.values.size(), -1);
  for (std::size_t k = 0; k < graph.nodes.size(); ++k) {
    for (ValueId in : graph.nodes[k].inputs)
      last_use[static_cast<std::size_t>(in)] = static_cast<int>(k);
  }
  for (ValueId o : graph.outputs) last_use[static_cast<std::size_t>(o)] = kKeep;
  for (const GradBinding& b : graph.grads) last_use[static_cast<std::size_t>(b.grad)] = kKeep;
  for (std::size_t v = 0; v < graph.values.size(); ++v) {
    const int k = last_use[v];
    if (k >= 0 && k != kKeep && graph.values[v].origin == ValueOrigin::Node)
      release_after_[static_cast<std::size_t>(k)].push_back(static_cast<ValueId>(v));
  }
  // When each parameter's gradient is final: after the last node that makes or writes its
  // buffer (an assigned gradient), or writes the bound grad() state slot in place.
  std::vector<int> last_write(graph.values.size(), -1);  // by storage owner
  for (std::size_t k = 0; k < graph.nodes.size(); ++k) {
    for (ValueId o : graph.nodes[k].outputs)
      last_write[static_cast<std::size_t>(graph.storage_of(o))] = static_cast<int>(k);
    for (const auto& w : graph.nodes[k].writes)
      last_write[static_cast<std::size_t>(graph.storage_of(w.first))] = static_cast<int>(k);
  }
  std::vector<bool> assigned(graph.state.size(), false);  // by parameter slot
  for (const GradBinding& b : graph.grads) {
    assigned[static_cast<std::size_t>(b.state)] = true;
    const int k = last_write[static_cast<std::size_t>(graph.storage_of(b.grad))];
    if (k >= 0) grads_final_after_[static_cast<std::size_t>(k)].emplace_back(b.state, b.grad);
  }
  for (std::size_t s = 0; s < graph.state_grad_of.size(); ++s) {
    const int32_t param = graph.state_grad_of[s];
    // A parameter the graph assigns a new gradient replaces the bound one (zeroed in place
    // first, say): its gradient is the assigned value.
    if (param < 0 || assigned[static_cast<std::size_t>(param)]) continue;
    const int k = last_write[static_cast<std::size_t>(graph.storage_of(graph.state[s]))];
    if (k >= 0) grads_final_after_[static_cast<std::size_t>(k)].emplace_back(param, kNoValue);
  }
}

Executor::Executor(const Graph& graph, const MemoryPlan& plan,
                   std::span<const int32_t> paired_first)
    : Executor(graph, paired_first) {
  // The arena is host memory: a graph with values elsewhere runs without it.
  for (const Value& v : graph.values)
    if (v.meta.device.type != DeviceType::CPU) return;
  node_memory_.resize(graph.nodes.size());
  for (const MemoryPlan::Buffer& b : plan.buffers) {
    NodeMemory& m = node_memory_[static_cast<std::size_t>(b.first)];
    if (b.value == kNoValue) {
      m.workspace_offset = b.offset;
      m.workspace_bytes = b.bytes;
    } else {
      const Value& v = graph.value(b.value);
      ATH_CHECK(v.origin == ValueOrigin::Node && v.node == b.first, ValueError,
                "graph executor: the memory plan places %{} at node {}, but node {} made it",
                b.value, b.first, v.node);
      m.outputs.push_back({.index = v.output, .offset = b.offset});
    }
  }
  arena_bytes_ = plan.arena_bytes;
}

void Executor::allocate_arena() const {
  // What the caching allocator kept from the eager runs (the warm-up and the traces) is what
  // the arena replaces: handed back first, so that the process never holds both.
  empty_cache();
  arena_ = empty({arena_bytes_}, kUInt8);
  auto* base = static_cast<std::byte*>(arena_.data_ptr());
  for (std::size_t k = 0; k < node_memory_.size(); ++k) {
    for (const PlannedOutput& o : node_memory_[k].outputs) {
      const TensorMeta& meta =
          graph_.value(graph_.nodes[k].outputs[static_cast<std::size_t>(o.index)]).meta;
      const auto bytes = static_cast<std::size_t>(numel(meta.shape)) * element_size(meta.dtype);
      // Each slice is a storage of its own, as an allocated buffer would be (kernels that
      // compare storages see distinct buffers); it keeps the arena alive should a view of it
      // ever outlive the run.
      o.storage = StorageImpl::wrap(
          base + o.offset, bytes, [keep = arena_.impl_ptr()](void*) {}, meta.device);
    }
  }
}

void Executor::release_arena() const {
  if (arena_busy_.exchange(true, std::memory_order_acquire)) return;
  for (const NodeMemory& m : node_memory_)
    for (const PlannedOutput& o : m.outputs) o.storage.reset();
  arena_ = Tensor();
  arena_busy_.store(false, std::memory_order_release);
}

void Executor::run_node(std::size_t k, std::vector<Tensor>& slot, std::vector<Tensor>& inputs,
                        bool use_arena, RunStats& stats) const {
  const Graph& g = graph_;
  const Node& n = g.nodes[k];
  inputs.clear();
  for (ValueId in : n.inputs) inputs.push_back(slot[static_cast<std::size_t>(in)]);
  std::shared_ptr<const void> fresh;
  const void* attrs = n.attrs.get();
  if (n.attr_source) {
    fresh = n.attr_source();
    attrs = fresh.get();
  }
  if (n.write == WriteKind::IntoSelf) {
    Tensor target = inputs[0];
    // The kernel writes the target directly (as call_inplace does without autograd) unless
    // another input shares its memory: then the result is computed first and copied in.
    bool aliased = false;
    for (std::size_t i = 1; i < inputs.size(); ++i)
      aliased = aliased || inputs[i].shares_storage(target);
    if (aliased) {
      Outputs out = n.op->run(TensorSpan(inputs), attrs);
      detail::copy_into(target, out[0]);
    } else {
      n.op->run_inplace(target, TensorSpan(inputs), attrs);
    }
    slot[static_cast<std::size_t>(n.writes[0].second)] = target;
    return;
  }
  Outputs out;
  if (use_arena && n.op->kind != OpKind::View) {
    const NodeMemory& m = node_memory_[k];
    out.resize(n.outputs.size());
    for (const PlannedOutput& o : m.outputs) {
      const TensorMeta& meta = g.value(n.outputs[static_cast<std::size_t>(o.index)]).meta;
      out[static_cast<std::size_t>(o.index)] = Tensor(std::make_shared<TensorImpl>(
          o.storage, meta.shape, contiguous_strides(meta.shape), 0, meta.dtype));
    }
    stats.arena_buffers += static_cast<int64_t>(m.outputs.size()) + (m.workspace_bytes > 0);
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (out[i].defined()) continue;
      const TensorMeta& meta = g.value(n.outputs[i]).meta;
      out[i] = empty(meta.shape, meta.dtype, meta.device);
      ++stats.allocated_buffers;
    }
    std::span<std::byte> workspace;
    if (m.workspace_bytes > 0)
      workspace =
          std::span<std::byte>(static_cast<std::byte*>(arena_.data_ptr()) + m.workspace_offset,
                               static_cast<std::size_t>(m.workspace_bytes));
    try {
      n.op->run_into(TensorSpan(inputs), std::span<Tensor>(out.data(), out.size()), attrs,
                     workspace);
    } catch (Error& e) {
      e.prepend(fmt::format("graph executor: node {} ({}): ", k, n.op->name));
      throw;
    }
  } else {
    out = n.op->run(TensorSpan(inputs), attrs);
    if (n.op->kind != OpKind::View) stats.allocated_buffers += static_cast<int64_t>(out.size());
    for (std::size_t i = 0; i < n.outputs.size(); ++i) {
      const Value& v = g.value(n.outputs[i]);
      ATH_CHECK(i < out.size() && out[i].shape() == v.meta.shape && out[i].dtype() == v.meta.dtype,
                ValueError,
                "graph executor: node {} ({}) made {} where the trace recorded {} (a shape that "
                "depends on the data cannot be replayed)",
                k, n.op->name,
                i < out.size() ? type_string({out[i].shape(), out[i].dtype()}) : "nothing",
                type_string(v.meta));
    }
  }
  for (std::size_t i = 0; i < n.outputs.size(); ++i)
    slot[static_cast<std::size_t>(n.outputs[i])] = std::move(out[i]);
  for (const auto& [from, to] : n.writes)
    slot[static_cast<std::size_t>(to)] = slot[static_cast<std::size_t>(from)];
}

void Executor::run_pair(std::size_t k, std::vector<Tensor>& slot, bool use_arena,
                        RunStats& stats) const {
  // Each thread runs one node into its own slots (the two are independent: neither reads what
  // the other makes or writes), with its own scratch and stats; errors cross the region as
  // exception_ptrs.
  RunStats part[2];
  auto branch = [&](int i) {
    return [&, i] {
      NoGradGuard no_grad;  // a worker thread's modes are its own
      detail::AutocastPause no_autocast;
      std::vector<Tensor> inputs;
      run_node(k + static_cast<std::size_t>(i), slot, inputs, use_arena, part[i]);
    };
  };
  run_concurrently(branch(0), branch(1));
  stats.arena_buffers += part[0].arena_buffers + part[1].arena_buffers;
  stats.allocated_buffers += part[0].allocated_buffers + part[1].allocated_buffers;
  ++stats.pairs;
}

std::vector<Tensor> Executor::run(std::span<const Tensor> arguments) const {
  const Graph& g = graph_;
  ATH_CHECK(arguments.size() == g.arguments.size(), ValueError,
            "graph executor: the graph takes {} arguments, got {}", g.arguments.size(),
            arguments.size());
  std::vector<Tensor> slot(g.values.size());
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    const Value& v = g.value(g.arguments[i]);
    const Tensor& a = arguments[i];
    ATH_CHECK(a.defined() && a.shape() == v.meta.shape && a.dtype() == v.meta.dtype, ValueError,
              "graph executor: argument {} is {}, the graph was made for {}", i,
              a.defined() ? type_string({a.shape(), a.dtype()}) : "undefined", type_string(v.meta));
    slot[static_cast<std::size_t>(g.arguments[i])] = a;
  }
  for (std::size_t i = 0; i < g.state.size(); ++i)
    slot[static_cast<std::size_t>(g.state[i])] = g.state_tensors[i];
  for (std::size_t v = 0; v < g.values.size(); ++v) {
    if (g.values[v].origin == ValueOrigin::Constant)
      slot[v] = g.constants[static_cast<std::size_t>(g.values[v].index)];
  }

  // One run at a time owns the arena and the stats; a concurrent one runs without them.
  ArenaClaim claim;
  const bool exclusive = !arena_busy_.exchange(true, std::memory_order_acquire);
  if (exclusive) claim.busy = &arena_busy_;
  const bool use_arena = exclusive && !node_memory_.empty();
  if (use_arena && !arena_.defined()) allocate_arena();
  RunStats stats{.used_arena = use_arena};
  NoGradGuard no_grad;                // the backward is in the graph already
  detail::AutocastPause no_autocast;  // so are the casts
  std::vector<Tensor> inputs;
  // Parameters whose gradient is final after node k: reported as the replay goes on.
  auto gradients_final_after = [&](std::size_t k) {
    if (!gradient_ready_) return;
    for (const auto& [param, grad] : grads_final_after_[k]) {
      const Tensor& p = g.state_tensors[static_cast<std::size_t>(param)];
      if (grad != kNoValue) p.set_grad(slot[static_cast<std::size_t>(grad)]);
      gradient_ready_(p);
    }
  };
  // Profiled only by the run that owns the stats (a concurrent one would race on them).
  const bool profiled = profiling_ && exclusive;
  using Clock = std::chrono::steady_clock;
  const Clock::time_point run_start = profiled ? Clock::now() : Clock::time_point{};
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    const Clock::time_point node_start = profiled ? Clock::now() : Clock::time_point{};
    const std::size_t first = k;
    if (runs_with_next_[k]) {
      run_pair(k, slot, use_arena, stats);
      gradients_final_after(k);
      for (ValueId dead : release_after_[k]) slot[static_cast<std::size_t>(dead)] = Tensor();
      ++k;
    } else {
      run_node(k, slot, inputs, use_arena, stats);
    }
    if (profiled) {
      profile_.seconds[first] += std::chrono::duration<double>(Clock::now() - node_start).count();
      profile_.paired[first] = first != k;
    }
    gradients_final_after(k);
    for (ValueId dead : release_after_[k]) slot[static_cast<std::size_t>(dead)] = Tensor();
  }
  for (const GradBinding& b : g.grads)
    g.state_tensors[static_cast<std::size_t>(b.state)].set_grad(
        slot[static_cast<std::size_t>(b.grad)]);
  std::vector<Tensor> results;
  results.reserve(g.outputs.size());
  for (ValueId o : g.outputs) results.push_back(slot[static_cast<std::size_t>(o)]);
  if (exclusive) last_run_ = stats;
  if (profiled) {
    ++profile_.runs;
    profile_.run_seconds += std::chrono::duration<double>(Clock::now() - run_start).count();
  }
  return results;
}

void Executor::set_profiling(bool on) const {
  profiling_ = on;
  if (on) {
    profile_ = NodeProfile{};
    profile_.seconds.assign(graph_.nodes.size(), 0.0);
    profile_.paired.assign(graph_.nodes.size(), false);
  }
}

}  // namespace ath::graph
