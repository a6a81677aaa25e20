// Reverse-mode automatic differentiation over the graph recorded by the dispatcher.
//
//   Tensor w = randn({3}).requires_grad_();
//   Tensor loss = (w * w).sum();  // built from tensors with requires_grad
//   loss.backward();              // accumulates into each leaf's grad()
//   loss = (w * w).sum();         // (backward freed the graph; record it again)
//   auto g = grad({loss}, {w});   // or returns gradients without touching grad()
//   assert(all(eq(g[0], w.grad())).item<bool>());   // both 2 * w
//
// Nodes run once all their consumers have delivered gradients, latest-created first, on the
// calling thread. Tensor hooks run when their tensor's gradient is complete (leaf hooks before
// accumulation, and may replace it); post-accumulate hooks run once a leaf's grad() holds it, so
// a data-parallel wrapper can start all-reducing a gradient as soon as it is ready, and a
// callback queued with queue_callback runs when the whole pass is done. A leaf's grad() is one
// buffer: later passes accumulate into it in place until zero_grad() sets it to none.
#pragma once

#include <functional>
#include <vector>

#include "athanor/tensor/tensor.h"

namespace ath {

struct BackwardOptions {
  bool retain_graph = false;  // keep saved tensors for another backward (implied by create_graph)
  bool create_graph = false;  // record the backward pass itself (higher-order gradients)
};

// Computes d(sum of roots * grad_roots) and accumulates it into the leaves' grad().
// grad_roots may be empty: each root must then hold one element, and gets gradient 1.
void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_roots = {},
              BackwardOptions options = {});

// Returns d(roots)/d(inputs) without accumulating into grad(). An input the roots do not
// depend on gets an undefined tensor, or an error unless allow_unused.
std::vector<Tensor> grad(const std::vector<Tensor>& roots, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_roots = {}, BackwardOptions options = {},
                         bool allow_unused = false);

// Queues `callback` to run on this thread once the backward pass now running has run all its
// nodes (every gradient accumulated), before backward()/grad() returns; callbacks run in queue
// order and may queue more. PyTorch's `Variable._execution_engine.queue_callback`: a hook uses it
// to wait for the whole pass (a data-parallel wrapper flushing its last gradient bucket).
// Throws AutogradError outside a backward pass.
void queue_callback(std::function<void()> callback);

// Anomaly mode: every gradient a node produces is checked for NaN/Inf; the error names the op.
class AnomalyMode {
 public:
  static bool is_enabled();
  static void set_enabled(bool enabled);
};
class DetectAnomalyGuard {
 public:
  DetectAnomalyGuard() : prev_(AnomalyMode::is_enabled()) { AnomalyMode::set_enabled(true); }
  ~DetectAnomalyGuard() { AnomalyMode::set_enabled(prev_); }
  DetectAnomalyGuard(const DetectAnomalyGuard&) = delete;
  DetectAnomalyGuard& operator=(const DetectAnomalyGuard&) = delete;

 private:
  bool prev_;
};

}  // namespace ath
