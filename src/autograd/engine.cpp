#include "athanor/autograd/engine.h"

#include <atomic>
#include <functional>
#include <queue>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "athanor/core/yield_point.h"
#include "athanor/ops/accumulate_grad.h"
#include "athanor/ops/creation.h"
#include "athanor/ops/pointwise.h"
#include "athanor/ops/reduction.h"
#include "athanor/tensor/grad_mode.h"

namespace ath {

namespace {

std::atomic<bool> g_anomaly{false};

// The callbacks queued during the backward pass running on this thread (null outside one). A
// hook may start a backward pass of its own: each pass keeps its own list.
thread_local std::vector<std::function<void()>>* t_queued_callbacks = nullptr;

class QueuedCallbacksScope {
 public:
  QueuedCallbacksScope() : previous_(std::exchange(t_queued_callbacks, &callbacks_)) {}
  ~QueuedCallbacksScope() { t_queued_callbacks = previous_; }
  QueuedCallbacksScope(const QueuedCallbacksScope&) = delete;
  QueuedCallbacksScope& operator=(const QueuedCallbacksScope&) = delete;

  // In queue order; a callback may queue more, which run in the same loop.
  void run_all() {
    for (std::size_t i = 0; i < callbacks_.size(); ++i) {
      std::function<void()> callback = std::move(callbacks_[i]);
      callback();
    }
    callbacks_.clear();
  }

 private:
  std::vector<std::function<void()>> callbacks_;
  std::vector<std::function<void()>>* previous_;
};

struct NodeOrder {  // later-created nodes first: they consume earlier nodes' outputs
  bool operator()(const Node* a, const Node* b) const { return a->sequence_nr < b->sequence_nr; }
};

bool has_non_finite(const Tensor& t) {
  if (!is_floating(t.dtype())) return false;
  bool bad = false;
  for (double v : t.to_vector<double>()) bad = bad || !std::isfinite(v);
  return bad;
}

void accumulate(GradList& slots, uint32_t slot, Tensor g) {
  if (slots.size() <= slot) slots.resize(slot + 1);
  Tensor& s = slots[slot];
  if (!g.defined()) return;
  s = s.defined() ? add(s, g) : std::move(g);
}

// Runs one backward pass. When `captures` is non-empty, the gradients flowing into those edges
// are returned instead of accumulated into leaves.
std::vector<Tensor> run(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_roots,
                        BackwardOptions options, const std::vector<Edge>& captures) {
  ATH_CHECK(grad_roots.empty() || grad_roots.size() == roots.size(), ValueError,
            "backward: got {} roots but {} gradients", roots.size(), grad_roots.size());
  AutoGradMode mode(options.create_graph);
  // As in PyTorch, building a differentiable backward graph keeps the forward one alive.
  const bool retain = options.retain_graph || options.create_graph;

  // 1. Root gradients and the starting edges.
  std::unordered_map<Node*, GradList> buffers;
  std::vector<std::shared_ptr<Node>> starts;
  for (std::size_t i = 0; i < roots.size(); ++i) {
    const Tensor& r = roots[i];
    Edge e = gradient_edge(r);
    ATH_CHECK(e.valid(), AutogradError,
              "element {} of tensors does not require grad and does not have a grad_fn", i);
    Tensor g;
    if (grad_roots.empty() || !grad_roots[i].defined()) {
      ATH_CHECK(r.numel() == 1, AutogradError,
                "grad can be implicitly created only for scalar outputs; root {} has shape {}", i,
                to_string(r.shape()));
      g = ones_like(r);
    } else {
      g = grad_roots[i];
      ATH_CHECK(g.shape() == r.shape(), ShapeError,
                "backward: gradient of shape {} for a root of shape {}", to_string(g.shape()),
                to_string(r.shape()));
    }
    accumulate(buffers[e.node.get()], e.input_nr, std::move(g));
    starts.push_back(e.node);
  }

  // 2. Dependency counts: how many edges lead into each node from the reachable graph.
  std::unordered_map<Node*, int> deps;
  std::unordered_set<Node*> seen;
  std::vector<Node*> stack;
  for (auto& s : starts) {
    if (seen.insert(s.get()).second) stack.push_back(s.get());
  }
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next_edges) {
      if (!e.valid()) continue;
      ++deps[e.node.get()];
      if (seen.insert(e.node.get()).second) stack.push_back(e.node.get());
    }
  }

  std::vector<Tensor> captured(captures.size());
  QueuedCallbacksScope queued_callbacks;

  // 3. Run nodes whose inputs are complete, latest first.
  std::priority_queue<Node*, std::vector<Node*>, NodeOrder> ready;
  std::unordered_set<Node*> queued;
  for (auto& s : starts) {
    if (deps[s.get()] == 0 && queued.insert(s.get()).second) ready.push(s.get());
  }
  while (!ready.empty()) {
    Node* node = ready.top();
    ready.pop();
    GradList grads = std::move(buffers[node]);
    buffers.erase(node);
    grads.resize(node->output_meta.size());

    for (auto& [slot, hook] : node->pre_hooks) {  // non-leaf tensor hooks
      if (slot < grads.size() && grads[slot].defined()) {
        Tensor r = hook.second(grads[slot]);
        if (r.defined()) grads[slot] = r;
      }
    }
    if (!captures.empty()) {
      for (std::size_t i = 0; i < captures.size(); ++i) {
        if (captures[i].node.get() == node) captured[i] = grads[captures[i].input_nr];
      }
      // grad() returns gradients; it never accumulates into leaves.
      if (dynamic_cast<AccumulateGrad*>(node) != nullptr) continue;
    }

    bool any = false;
    for (const Tensor& g : grads) any = any || g.defined();
    GradList outs;
    if (any) outs = node->apply(std::move(grads));
    if (!retain) node->release_saved();

    if (AnomalyMode::is_enabled()) {
      for (std::size_t i = 0; i < outs.size(); ++i) {
        ATH_CHECK(!outs[i].defined() || !has_non_finite(outs[i]), AutogradError,
                  "anomaly: backward of '{}' returned NaN or Inf in its gradient for input {}",
                  node->name(), i);
      }
    }
    for (std::size_t i = 0; i < node->next_edges.size(); ++i) {
      const Edge& e = node->next_edges[i];
      if (!e.valid()) continue;
      if (i < outs.size() && outs[i].defined()) {
        accumulate(buffers[e.node.get()], e.input_nr, std::move(outs[i]));
      }
      if (--deps[e.node.get()] == 0 && queued.insert(e.node.get()).second) ready.push(e.node.get());
    }
    // A communicator thread with collectives in flight (DDP's bucket all-reduces) gets the core
    // between nodes: the scheduler would not preempt this thread for it.
    yield_point();
  }
  queued_callbacks.run_all();
  return captured;
}

}  // namespace

void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_roots,
              BackwardOptions options) {
  run(roots, grad_roots, options, {});
}

std::vector<Tensor> grad(const std::vector<Tensor>& roots, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_roots, BackwardOptions options,
                         bool allow_unused) {
  std::vector<Edge> captures;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    Edge e = gradient_edge(inputs[i]);
    ATH_CHECK(e.valid(), AutogradError, "grad: input {} does not require grad", i);
    captures.push_back(e);
  }
  std::vector<Tensor> out = run(roots, grad_roots, options, captures);
  for (std::size_t i = 0; i < out.size(); ++i) {
    ATH_CHECK(out[i].defined() || allow_unused, AutogradError,
              "grad: input {} was not used in the graph; pass allow_unused to get an undefined "
              "gradient",
              i);
  }
  return out;
}

void queue_callback(std::function<void()> callback) {
  ATH_CHECK(t_queued_callbacks != nullptr, AutogradError,
            "queue_callback: no backward pass is running on this thread (call it from a hook)");
  t_queued_callbacks->push_back(std::move(callback));
}

bool AnomalyMode::is_enabled() { return g_anomaly.load(std::memory_order_relaxed); }
void AnomalyMode::set_enabled(bool enabled) { g_anomaly.store(enabled, std::memory_order_relaxed); }

}  // namespace ath
