// The tracer: runs code eagerly while recording every registry call it makes into a Graph.
// Because the autograd engine's backward formulas and the optimizers' updates are registry calls
// too, tracing a training step records forward, backward and update in one graph.
//
//   #include "athanor/graph/tracer.h"
//   Tensor x = randn({4, 3});
//   graph::Tracer tracer({x});                  // x is argument 0
//   Tensor y = relu(x) * 2.0;                  // runs eagerly, and is recorded
//   graph::Graph g = tracer.finish({y});
//   assert(g.count("relu") == 1 && g.count("mul") == 1);
//
// What the tracer needs of the code it records:
// - every tensor computation goes through the op registry (the dispatcher's OpObserver hook);
// - no host reads (item(), to_vector()) between the first and the last op: a value read on
//   the host may steer what runs next, which a replay cannot see. The trace then fails (ok()
//   is false, failure() says which read after which op) and the caller runs eagerly.
// Tensors the code reads without having made them become the graph's state (bound by identity:
// parameters, optimizer state, gradient buffers) or, when nothing but the graph holds them once
// the code has returned, constants (scalar operands). A parameter whose `.grad` ends up holding
// a tensor the trace made gets a GradBinding, since the engine assigns it without an op call.
#pragma once

#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>

#include "athanor/graph/graph.h"
#include "athanor/ops/dispatch.h"

namespace ath::graph {

class Tracer final : public OpObserver {
 public:
  // Installs itself as this thread's op observer (and host-read observer) until finish().
  explicit Tracer(std::span<const Tensor> arguments);
  explicit Tracer(std::initializer_list<Tensor> arguments)
      : Tracer(std::span<const Tensor>(arguments.begin(), arguments.size())) {}
  ~Tracer() override;
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  void on_op(const OpDef& op, TensorSpan inputs, std::span<const Tensor> outputs,
             const void* attrs) override;

  // Stops recording and returns the graph, with `outputs` as its outputs.
  Graph finish(std::span<const Tensor> outputs);
  Graph finish(std::initializer_list<Tensor> outputs) {
    return finish(std::span<const Tensor>(outputs.begin(), outputs.size()));
  }

  bool ok() const { return failure_.empty(); }
  // Why the recorded graph cannot stand for the code: empty while ok().
  const std::string& failure() const { return failure_; }
  void fail(std::string why);
  // Fails the trace recording on this thread, if any (code with a side effect a replay cannot
  // repeat calls it: the Trainer's log() of a host number inside a compiled step).
  static void fail_active(std::string why);
  // Stops the trace recording on this thread, if any, from seeing what runs in this scope (its
  // ops, its host reads): for user code that runs eagerly at every step beside a compiled one —
  // the Trainer's step hooks, whose overrides it detects and splits the step at.
  class Pause {
   public:
    Pause();
    ~Pause();
    Pause(const Pause&) = delete;
    Pause& operator=(const Pause&) = delete;

   private:
    OpObserver* paused_ = nullptr;
  };

 private:
  struct Seen {
    std::weak_ptr<TensorImpl> impl;  // holds the control block, so the address is not reused
    ValueId value;
  };
  ValueId value_of(const Tensor& t, const std::string& where);
  void bind(const Tensor& t, ValueId v);
  static void on_host_read(const char* what);

  Graph graph_;
  std::unordered_map<const TensorImpl*, Seen> seen_;
  // What the trace knows of each buffer its tensors use. `storage` tells a live buffer from a
  // freed one whose address the allocator handed out again.
  struct Placed {
    ValueId value;
    int64_t offset;  // in elements
  };
  struct Buffer {
    std::weak_ptr<StorageImpl> storage;
    ValueId owner;  // the value that owns the buffer
    // Every value bound on it: a tensor first seen with exactly the layout of one of them (a
    // detached alias the autograd engine saved) is that value under another handle. Any other
    // view of a buffer the trace made was built outside the registry and cannot be bound.
    std::vector<Placed> placed;
  };
  std::unordered_map<const StorageImpl*, Buffer> buffers_;
  Buffer* live_buffer(const Tensor& t);
  ValueId same_layout_value(const Buffer& buffer, const Tensor& t) const;
  std::string failure_;
  OpObserver* previous_observer_ = nullptr;
  detail::HostReadObserver previous_host_read_ = nullptr;
  Tracer* previous_tracer_ = nullptr;
  bool finished_ = false;
};

}  // namespace ath::graph
