// The dispatcher: the single path every op call takes.
//
//   Tensor a = ones({2}), b = ones({2});
//   Tensor y = call1(op_add(), {a, b}, AlphaAttrs{.alpha = 1});   // what add(a, b) does
//   assert(y.to_vector<float>()[0] == 2);
//
// 1. shape rule (validates; errors are prefixed with the op's name),
// 2. inputs converted to the kernel dtype (type promotion), outputs allocated,
// 3. the kernel for (device, dtype) runs — or, for a view op, the aliasing output is built,
// 4. if grad mode is on and an input requires grad, an OpNode is recorded (an op that writes
//    inputs in place, such as an optimizer update, is not differentiable: it bumps their
//    versions instead),
// 5. if a tracer is installed, the call is appended to its graph.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "athanor/core/error.h"
#include "athanor/ops/op.h"
#include "athanor/tensor/grad_mode.h"

namespace ath {

// Receives every op call while installed (the graph tracer implements this).
class OpObserver {
 public:
  virtual ~OpObserver() = default;
  virtual void on_op(const OpDef& op, TensorSpan inputs, std::span<const Tensor> outputs,
                     const void* attrs) = 0;  // attrs: the op's attribute struct
};
// Installs an observer for the current thread; returns the previous one.
OpObserver* set_op_observer(OpObserver* observer);

namespace detail {

extern thread_local OpObserver* t_observer;

// Pauses the thread's op observer: the calls made meanwhile are parts of one larger call, which
// the observer sees once.
class ObserverPause {
 public:
  ObserverPause() : observer_(t_observer) { t_observer = nullptr; }
  ~ObserverPause() { t_observer = observer_; }
  ObserverPause(const ObserverPause&) = delete;
  ObserverPause& operator=(const ObserverPause&) = delete;

 private:
  OpObserver* observer_;
};

// Autocast's thread state (ops/autocast.h): the dtype it casts to, or nullopt when off.
extern thread_local std::optional<DType> t_autocast;

// Turns autocast off for a scope without ending its cast cache: inside kernels (the ops a kernel
// calls run as it chose), backward formulas and in-place calls.
class AutocastPause {
 public:
  AutocastPause() : previous_(t_autocast) { t_autocast.reset(); }
  ~AutocastPause() { t_autocast = previous_; }
  AutocastPause(const AutocastPause&) = delete;
  AutocastPause& operator=(const AutocastPause&) = delete;

 private:
  std::optional<DType> previous_;
};

// The inputs autocast gives an op with a policy: floating inputs cast (differentiably, through
// a per-scope cache for parameters) to the autocast dtype or to float32; `inputs` itself when
// none needs a cast.
TensorSpan autocast_inputs(const OpDef& op, TensorSpan inputs, std::vector<Tensor>& storage);

// The one scope every kernel runs in (with the input promotion before it): grad mode off, so
// what a kernel calls back into the dispatcher (contiguous(), to(), empty()) records no graph,
// the observer paused, so a user-level call is exactly one on_op, and autocast off.
struct KernelScope {
  NoGradGuard no_grad;
  ObserverPause observer_pause;
  AutocastPause autocast_pause;
};

// The workspace of the kernel running on this thread: allocated on `device` for the scope's
// life when bytes > 0 (a kernel that calls an op with its own workspace sees that one inside the
// call and its own again after).
class WorkspaceScope {
 public:
  WorkspaceScope(std::size_t bytes, Device device);
  // The kernel's workspace is `provided` (a planned arena slice) when it holds `bytes`, else
  // allocated as above.
  WorkspaceScope(std::size_t bytes, Device device, std::span<std::byte> provided);
  ~WorkspaceScope();
  WorkspaceScope(const WorkspaceScope&) = delete;
  WorkspaceScope& operator=(const WorkspaceScope&) = delete;

 private:
  Tensor buffer_;
  std::span<std::byte> previous_;
};

// Non-template halves of call(), kept out of line so each op's instantiation stays small.
// Checks the arity and that every input is defined and on one device, which it returns (the
// CPU for an op without inputs).
Device check_inputs(const OpDef& op, TensorSpan inputs);
// Allocates the outputs on `device`, recording it in spec's metadata.
Outputs allocate_outputs(OutputSpec& spec, Device device);
// Checks that caller-allocated outputs (OpDef::run_into) are what the shape rule says: count,
// shape, dtype, device, contiguity.
void check_provided_outputs(const OutputSpec& spec, Device device, std::span<const Tensor> outputs);
// Converts inputs selected by the op's promote mask to `dtype`; returns inputs unchanged (and
// `storage` empty) when no conversion is needed.
TensorSpan promote(const OpDef& op, TensorSpan inputs, DType dtype, std::vector<Tensor>& storage);
[[noreturn]] void missing_kernel(const OpDef& op, DeviceType device, DType dtype);
bool any_requires_grad(TensorSpan inputs);
void add_context(Error& e, const OpDef& op);
// For an op that writes inputs in place: refuses a written input that autograd tracks (while
// grad mode is on, as PyTorch refuses an in-place write to a leaf that requires grad), before
// the kernel runs; after it, bumps each written input's version counter.
void check_written_inputs(const OpDef& op, TensorSpan inputs, const void* attrs);
void bump_written_inputs(const OpDef& op, TensorSpan inputs, const void* attrs);

// (wire_node, run_backward and release, the autograd wiring, are declared in op.h.)

template <class A>
class OpNode final : public Node {
 public:
  OpNode(const Op<A>& op, const A& attrs) : op_(op), attrs_(attrs) {}
  std::string_view name() const override { return op_.name; }
  GradList apply(GradList&& grads) override {
    auto thunk = [](BackwardContext& ctx, const void* a) {
      const auto* self = static_cast<const OpNode*>(a);
      self->op_.spec().backward(ctx, self->attrs_);
    };
    return run_backward(*this, ctx_, op_, std::move(grads), thunk, this);
  }
  void release_saved() override { release(ctx_); }
  bool is_view() const override { return op_.kind == OpKind::View; }
  BackwardContext& ctx() { return ctx_; }

 private:
  const Op<A>& op_;
  A attrs_;
  BackwardContext ctx_;
};

// The kernel half that call() and OpDef::run_into share: the in-place write checks, the input
// promotion, the kernel lookup, its workspace (`workspace` when it is large enough, else
// allocated) and the run. `outputs()` yields the output tensors; it is called inside the kernel
// scope, since allocating them (empty()) is itself a dispatcher call the observer must not see.
template <class A, class OutputsFn>
void run_kernel(const Op<A>& op, TensorSpan inputs, const A& attrs, Device device,
                const OutputSpec& out_spec, std::span<std::byte> workspace, OutputsFn&& outputs) {
  if (op.writes_inputs) check_written_inputs(op, inputs, &attrs);
  KernelScope kernel_scope;
  std::vector<Tensor> converted;
  TensorSpan kernel_inputs = promote(op, inputs, out_spec.kernel_dtype, converted);
  auto kernel = op.typed_kernel(device.type, out_spec.kernel_dtype);
  if (kernel == nullptr) missing_kernel(op, device.type, out_spec.kernel_dtype);
  std::span<Tensor> out = outputs();
  const OpSpec<A>& spec = op.spec();
  WorkspaceScope scope(spec.workspace != nullptr ? spec.workspace(kernel_inputs, attrs) : 0, device,
                       workspace);
  kernel(kernel_inputs, out, attrs);
  if (op.writes_inputs) bump_written_inputs(op, inputs, &attrs);
}

}  // namespace detail

// Inside a kernel: the workspace its op declared (OpSpec::workspace), empty when none.
std::span<std::byte> kernel_workspace();

template <class A>
Outputs call(const Op<A>& op, TensorSpan inputs, const A& attrs = A{}) {
  Outputs outputs;
  std::vector<Tensor> autocast_storage;
  try {
    if (op.autocast != AutocastPolicy::None && detail::t_autocast.has_value()) [[unlikely]]
      inputs = detail::autocast_inputs(op, inputs, autocast_storage);
    const Device device = detail::check_inputs(op, inputs);
    const OpSpec<A>& spec = op.spec();
    if (spec.view != nullptr) {
      outputs.push_back(spec.view(inputs[0], attrs));
    } else {
      OutputSpec out_spec = spec.infer(inputs, attrs);
      detail::run_kernel(op, inputs, attrs, device, out_spec, {}, [&] {
        outputs = detail::allocate_outputs(out_spec, device);
        return std::span<Tensor>(outputs.data(), outputs.size());
      });
    }
  } catch (Error& e) {
    detail::add_context(e, op);
    throw;
  }
  if (GradMode::is_enabled() && op.differentiable && detail::any_requires_grad(inputs)) {
    auto node = std::make_shared<detail::OpNode<A>>(op, attrs);
    detail::wire_node(*node, node->ctx(), op, inputs,
                      std::span<Tensor>(outputs.data(), outputs.size()));
  }
  if (detail::t_observer != nullptr) [[unlikely]] {
    detail::t_observer->on_op(op, inputs, std::span<const Tensor>(outputs.data(), outputs.size()),
                              &attrs);
  }
  return outputs;
}

template <class A>
OutputSpec Op<A>::infer(TensorSpan inputs, const void* attrs) const {
  const A& a = *static_cast<const A*>(attrs);
  const Device device = detail::check_inputs(*this, inputs);
  if (spec_.view != nullptr) {
    Tensor view = spec_.view(inputs[0], a);
    return OutputSpec{{{view.shape(), view.dtype(), view.device()}}, view.dtype()};
  }
  OutputSpec spec = spec_.infer(inputs, a);
  for (TensorMeta& m : spec.outputs) m.device = device;
  return spec;
}

template <class A>
Outputs Op<A>::run(TensorSpan inputs, const void* attrs) const {
  return call(*this, inputs, *static_cast<const A*>(attrs));
}

template <class A>
void Op<A>::run_into(TensorSpan inputs, std::span<Tensor> outputs, const void* attrs,
                     std::span<std::byte> workspace) const {
  const A& a = *static_cast<const A*>(attrs);
  try {
    ATH_CHECK(spec_.view == nullptr, ValueError, "run_into: a view op has no kernel to run");
    const Device device = detail::check_inputs(*this, inputs);
    const OutputSpec out_spec = spec_.infer(inputs, a);
    detail::check_provided_outputs(out_spec, device, outputs);
    detail::run_kernel(*this, inputs, a, device, out_spec, workspace, [&] { return outputs; });
  } catch (Error& e) {
    detail::add_context(e, *this);
    throw;
  }
}

// Runs fn, prefixing any ath::Error it throws with the op's name: for argument checks a public
// function makes before it reaches call() (normalizing dims, clamping slice bounds).
template <class Fn>
decltype(auto) with_op_context(const OpDef& op, Fn&& fn) {
  try {
    return fn();
  } catch (Error& e) {
    detail::add_context(e, op);
    throw;
  }
}

template <class A>
Tensor call1(const Op<A>& op, TensorSpan inputs, const A& attrs = A{}) {
  return std::move(call(op, inputs, attrs)[0]);
}
template <class A>
Tensor call1(const Op<A>& op, std::initializer_list<Tensor> inputs, const A& attrs = A{}) {
  return std::move(call(op, TensorSpan(inputs.begin(), inputs.size()), attrs)[0]);
}

// In-place form: computes op(self, rest...) and writes the result into `self`.
// Without autograd the kernel writes straight into self when the op allows it (and self is
// contiguous with the result's dtype); otherwise the result is computed and copied in. With
// autograd, self's history is rebased onto the new node, as PyTorch does; a leaf that requires
// grad, or a view of one, is refused.
template <class A>
Tensor& call_inplace(const Op<A>& op, Tensor& self, TensorSpan inputs, const A& attrs = A{});

}  // namespace ath

#include "athanor/ops/dispatch_inplace.h"
