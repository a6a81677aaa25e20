// The op registry's unit: an operator declared once, as data. Eager calls, autograd, the tracer
// and (later) the graph compiler and ONNX importer all read the same OpDef.
//
// Defining an op (see src/ops/defs/ for real ones):
//
//   struct ScaleAttrs {  // attributes: an aggregate with a defaulted ==
//     double factor = 1;
//     bool operator==(const ScaleAttrs&) const = default;
//   };
//   const Op<ScaleAttrs>& op_scale() {
//     static const auto& op = define_op<ScaleAttrs>({
//         .name = "scale", .kind = OpKind::Pointwise, .num_inputs = 1,
//         .infer = [](TensorSpan in, const ScaleAttrs&) {  // the output is like the input
//           return OutputSpec{{{in[0].shape(), in[0].dtype()}}, in[0].dtype()}; },
//         .backward = [](BackwardContext& ctx, const ScaleAttrs& a) {
//           ctx.set_grad_input(0, mul(ctx.grad_output(0), a.factor)); },
//     });
//     return op;
//   }
//
// and its CPU kernel, registered for the dtypes it handles (the real ones are in
// src/ops/kernels/cpu/). Inputs may be strided; outputs come allocated and contiguous:
//
//   void scale_kernel(TensorSpan in, std::span<Tensor> out, const ScaleAttrs& a) {
//     Tensor x = in[0].contiguous();
//     dispatch_dtype(x.dtype(), [&]<class T>() {
//       for (int64_t i = 0; i < x.numel(); ++i)
//         out[0].data<T>()[i] = static_cast<T>(static_cast<double>(x.data<T>()[i]) * a.factor);
//     });
//   }
//   static KernelRegistrar<ScaleAttrs> reg(op_scale(), DeviceType::CPU, kFloatingTypes,
//                                          scale_kernel);
//
// Calls go through the dispatcher (athanor/ops/dispatch.h), autograd included:
//
//   Tensor x = randn({3}).requires_grad_();
//   Tensor y = call1(op_scale(), {x}, ScaleAttrs{.factor = 3});
//   sum(y).backward();
//   assert(x.grad().to_vector<float>()[0] == 3);
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "athanor/core/device.h"
#include "athanor/core/dtype.h"
#include "athanor/core/shape.h"
#include "athanor/ops/attr_codec.h"
#include "athanor/ops/attr_hash.h"
#include "athanor/tensor/autograd_meta.h"
#include "athanor/tensor/tensor.h"

namespace ath {

// How the graph compiler may fuse the op.
enum class OpKind : uint8_t {
  Pointwise,  // out[i] = f(in[i]...) after broadcasting: fuses into chains and epilogues
  Reduce,     // reduces dims: a pointwise producer can fuse into it
  View,       // output aliases input 0's storage; no kernel
  Opaque,     // anything else (GEMM, conv, gather, sort...): a fusion boundary
};

// Whether the kernel may write its output over an input of the output's shape and dtype: it
// reads each element of that input before it writes the same element of the output. OverInput0
// is what `add_` and friends (call_inplace) write directly; the graph compiler's memory plan
// writes a result over either input where that input's buffer dies (graph/memory_plan.h).
// EachOverItsInput: output 0 may be written over input 0 and output 1 over input 1, both at once
// (gelu_with_backward: the gradient over g, the GELU over x).
enum class InplacePolicy : uint8_t { None, OverInput0, OverInput1, EachOverItsInput };

// What autocast (ops/autocast.h) does to an op's floating inputs: nothing; cast them to the
// autocast dtype (bfloat16/float16: the matrix products, where low precision is fast); or
// cast low-precision ones up to float32 (where it would lose accuracy: softmax, norms,
// losses, reductions, exp/log). PyTorch's autocast op lists, as one field per op.
enum class AutocastPolicy : uint8_t { None, LowPrecision, Float32 };

// Which inputs an op writes in place (the optimizers' multi-tensor updates, gradient clipping):
// decided from the input count and the attributes, so a variadic op over tensor lists can say
// "every list but the gradients".
template <class A>
using MutatesFn = bool (*)(int input, int num_inputs, const A& attrs);

// The scratch bytes a kernel needs for these inputs (its workspace): the dispatcher allocates
// them on the inputs' device and hands them to the kernel (kernel_workspace() in dispatch.h),
// so a graph compiler can plan them with the other buffers instead of the kernel allocating.
template <class A>
using WorkspaceFn = std::size_t (*)(std::span<const Tensor> inputs, const A& attrs);

// Attributes are plain aggregate structs (so call sites use designated initializers) with a
// defaulted operator==; code that handles any op (the tracer, a graph executor) copies,
// compares and replays them type-erased through OpDef (clone_attrs, attrs_equal, infer, run).
struct NoAttrs {
  bool operator==(const NoAttrs&) const = default;
};

using TensorSpan = std::span<const Tensor>;
using Outputs = SmallVec<Tensor, 4>;

// A tensor's metadata as a shape rule states it: shape and dtype; the dispatcher fills in the
// device (the one the op's inputs share).
struct TensorMeta {
  Shape shape;
  DType dtype = kFloat32;
  Device device = kCPU;
};

// What a shape rule returns: the outputs' metadata and the dtype whose kernel computes them.
struct OutputSpec {
  SmallVec<TensorMeta, 4> outputs;
  DType kernel_dtype = kFloat32;
};

class BackwardContext;
class OpDef;
namespace detail {
// The dispatcher's side of a BackwardContext (dispatch.cpp): filling it when a node is recorded,
// running a formula with it, freeing what it saved. The only code that sees its bookkeeping.
void wire_node(Node& node, BackwardContext& ctx, const OpDef& op, TensorSpan inputs,
               std::span<Tensor> outputs);
GradList run_backward(Node& node, BackwardContext& ctx, const OpDef& op, GradList&& grads,
                      void (*fn)(BackwardContext&, const void*), const void* attrs);
void release(BackwardContext& ctx);
}  // namespace detail

// What a backward formula sees. Gradients flow in terms of registered ops, so a backward pass
// run with grad mode on (create_graph) is itself differentiable.
class BackwardContext {
 public:
  int num_inputs() const { return static_cast<int>(input_meta_.size()); }
  int num_outputs() const { return static_cast<int>(grad_outputs_.size()); }
  // A forward input or output saved for backward (declared in the op's save masks).
  const Tensor& input(int i) const;
  const Tensor& output(int i) const;
  const TensorMeta& input_meta(int i) const { return input_meta_[static_cast<std::size_t>(i)]; }
  const GradSlotMeta& output_meta(int i) const { return output_meta_[static_cast<std::size_t>(i)]; }
  // The gradient w.r.t. forward output i; zeros when nothing flowed into it.
  const Tensor& grad_output(int i);
  bool grad_output_defined(int i) const;
  // Whether forward input i needs a gradient; formulas skip the work for those that do not.
  bool needs_grad(int i) const { return needs_grad_[static_cast<std::size_t>(i)]; }
  void set_grad_input(int i, Tensor g);

 private:
  friend void detail::wire_node(Node&, BackwardContext&, const OpDef&, TensorSpan,
                                std::span<Tensor>);
  friend GradList detail::run_backward(Node&, BackwardContext&, const OpDef&, GradList&&,
                                       void (*)(BackwardContext&, const void*), const void*);
  friend void detail::release(BackwardContext&);

  // Filled by the node that owns the context.
  std::vector<Tensor> saved_inputs_, saved_outputs_;  // undefined where not saved
  std::vector<uint32_t> saved_input_versions_, saved_output_versions_;
  bool released_ = false;
  std::vector<TensorMeta> input_meta_;
  SmallVec<GradSlotMeta, 4> output_meta_;
  std::vector<bool> needs_grad_;
  GradList grad_outputs_;
  GradList grad_inputs_;
  std::string_view op_name_;
  // While a backward formula runs with grad mode on (create_graph): the node that owns this
  // context, and the saved outputs re-attached to it (cleared when the formula returns, so the
  // node never owns a reference to itself).
  Node* node_ = nullptr;
  mutable std::vector<Tensor> unpacked_outputs_;
};

using AnyFn = void (*)();

// The untyped part of an op: what the registry walk, the tracer and tests look at.
class OpDef {
 public:
  virtual ~OpDef() = default;

  std::string name;
  OpKind kind = OpKind::Opaque;
  int num_inputs = 1;  // -1: variadic (cat, stack)
  int num_outputs = 1;
  InplacePolicy inplace = InplacePolicy::None;
  AutocastPolicy autocast = AutocastPolicy::None;
  uint32_t save_inputs = 0;       // bit i: backward reads input i
  uint32_t save_outputs = 0;      // bit i: backward reads output i
  uint32_t promote_inputs = ~0u;  // bit i: input i is converted to the kernel dtype first
  // Whether the kernel writes some inputs in place (see mutates_input); such an op is not
  // differentiable, promotes nothing, and the dispatcher bumps the written inputs' versions.
  bool writes_inputs = false;
  bool differentiable = true;
  std::string not_differentiable_reason;  // required when !differentiable

  AnyFn kernel(DeviceType device, DType dtype) const {
    return kernels_[static_cast<int>(device)][static_cast<int>(dtype)];
  }
  bool has_kernel(DeviceType device, DType dtype) const { return kernel(device, dtype) != nullptr; }
  void set_kernel(DeviceType device, DType dtype, AnyFn fn, int priority);
  virtual bool has_shape_rule() const = 0;
  virtual bool has_backward() const = 0;
  // A heap copy of this op's attribute struct, passed type-erased.
  virtual std::shared_ptr<const void> clone_attrs(const void* attrs) const = 0;
  // Whether two attribute structs of this op are equal (field by field; a NaN is unequal).
  virtual bool attrs_equal(const void* a, const void* b) const = 0;
  // A hash of an attribute struct, consistent with attrs_equal (attr_hash.h).
  virtual std::size_t hash_attrs(const void* attrs) const = 0;
  // The attribute struct as bytes and back (attr_codec.h): what a saved graph stores per node.
  // encode throws NotImplementedError for attributes holding a pointer; decode throws
  // FormatError for bytes that do not hold exactly one struct.
  virtual std::string encode_attrs(const void* attrs) const = 0;
  virtual std::shared_ptr<const void> decode_attrs(std::string_view bytes) const = 0;
  // The op's shape rule (for a view op, the view it would build) and the op itself, run from
  // type-erased attributes: what a graph executor replays a recorded node with. `run` is
  // call(): kernel, autograd recording and the observer, as the typed call.
  virtual OutputSpec infer(TensorSpan inputs, const void* attrs) const = 0;
  virtual Outputs run(TensorSpan inputs, const void* attrs) const = 0;
  // The kernel alone, into outputs the caller allocated (contiguous, with the shapes and dtypes
  // `infer` gives; a ValueError otherwise) and with `workspace` as its scratch when it holds at
  // least workspace_bytes (else the call allocates its own): no autograd recording, no observer,
  // no autocast. What a graph executor with a memory plan runs; not for view ops.
  virtual void run_into(TensorSpan inputs, std::span<Tensor> outputs, const void* attrs,
                        std::span<std::byte> workspace) const = 0;
  // The op written into `self` (input 0, usually) without autograd, as call_inplace does under
  // NoGradGuard: the kernel writes self directly when the op allows it, else the result is
  // computed and copied in.
  virtual void run_inplace(Tensor& self, TensorSpan inputs, const void* attrs) const = 0;
  // Whether a call with `num_inputs` inputs and these attributes writes input `input` in place
  // (always false unless writes_inputs). What a tracer needs to order and functionalize them.
  virtual bool mutates_input(int input, int num_inputs, const void* attrs) const = 0;
  // The workspace bytes a call with these inputs and attributes gets (0: none declared).
  virtual std::size_t workspace_bytes(TensorSpan inputs, const void* attrs) const = 0;

 private:
  std::array<std::array<AnyFn, kNumDTypes>, kNumDeviceTypes> kernels_{};
  std::array<std::array<int, kNumDTypes>, kNumDeviceTypes> priorities_{};
};

template <class A>
struct OpSpec {
  using InferFn = OutputSpec (*)(TensorSpan inputs, const A& attrs);
  using ViewFn = Tensor (*)(const Tensor& input, const A& attrs);
  using BackwardFn = void (*)(BackwardContext& ctx, const A& attrs);

  std::string name;
  OpKind kind = OpKind::Opaque;
  int num_inputs = 1;
  int num_outputs = 1;
  InplacePolicy inplace = InplacePolicy::None;
  AutocastPolicy autocast = AutocastPolicy::None;
  uint32_t save_inputs = 0;
  uint32_t save_outputs = 0;
  uint32_t promote_inputs = ~0u;
  InferFn infer = nullptr;  // all ops but views
  ViewFn view = nullptr;    // views: builds the aliasing output from input 0
  BackwardFn backward = nullptr;
  std::string not_differentiable;      // set instead of backward: why there is no gradient
  MutatesFn<A> mutates = nullptr;      // ops that write inputs in place: which ones
  WorkspaceFn<A> workspace = nullptr;  // kernels that need scratch memory: how many bytes
};

template <class A>
class Op : public OpDef {
 public:
  using Kernel = void (*)(TensorSpan inputs, std::span<Tensor> outputs, const A& attrs);

  explicit Op(OpSpec<A> spec) : spec_(std::move(spec)) {
    name = spec_.name;
    kind = spec_.kind;
    num_inputs = spec_.num_inputs;
    num_outputs = spec_.num_outputs;
    inplace = spec_.inplace;
    autocast = spec_.autocast;
    save_inputs = spec_.save_inputs;
    save_outputs = spec_.save_outputs;
    promote_inputs = spec_.promote_inputs;
    differentiable = spec_.backward != nullptr;
    not_differentiable_reason = spec_.not_differentiable;
    writes_inputs = spec_.mutates != nullptr;
    if (writes_inputs) promote_inputs = 0;  // a converted copy would take the write
  }
  const OpSpec<A>& spec() const { return spec_; }
  Kernel typed_kernel(DeviceType device, DType dtype) const {
    return reinterpret_cast<Kernel>(kernel(device, dtype));
  }
  bool has_shape_rule() const override { return spec_.infer != nullptr || spec_.view != nullptr; }
  bool has_backward() const override { return spec_.backward != nullptr; }
  std::shared_ptr<const void> clone_attrs(const void* attrs) const override {
    return std::make_shared<const A>(*static_cast<const A*>(attrs));
  }
  bool attrs_equal(const void* a, const void* b) const override {
    return *static_cast<const A*>(a) == *static_cast<const A*>(b);
  }
  std::size_t hash_attrs(const void* attrs) const override {
    return ath::hash_attrs(*static_cast<const A*>(attrs));
  }
  std::string encode_attrs(const void* attrs) const override {
    std::string out;
    ath::encode_attrs(*static_cast<const A*>(attrs), out);
    return out;
  }
  std::shared_ptr<const void> decode_attrs(std::string_view bytes) const override {
    auto a = std::make_shared<A>();
    ath::decode_attrs(bytes, *a);
    ATH_CHECK(bytes.empty(), FormatError, "op '{}': {} bytes left after its attributes", name,
              bytes.size());
    return a;
  }
  OutputSpec infer(TensorSpan inputs, const void* attrs) const override;
  Outputs run(TensorSpan inputs, const void* attrs) const override;  // in dispatch.h
  void run_into(TensorSpan inputs, std::span<Tensor> outputs, const void* attrs,
                std::span<std::byte> workspace) const override;  // in dispatch.h
  void run_inplace(Tensor& self, TensorSpan inputs, const void* attrs) const override;
  std::size_t workspace_bytes(TensorSpan inputs, const void* attrs) const override {
    return spec_.workspace == nullptr ? 0 : spec_.workspace(inputs, *static_cast<const A*>(attrs));
  }
  bool mutates_input(int input, int num_inputs, const void* attrs) const override {
    return spec_.mutates != nullptr &&
           spec_.mutates(input, num_inputs, *static_cast<const A*>(attrs));
  }

 private:
  OpSpec<A> spec_;
};

// ---- the registry -------------------------------------------------------------------------

// Every op ever defined, in definition order.
std::vector<const OpDef*> all_ops();
const OpDef* find_op(std::string_view name);  // null when unknown

namespace detail {
void register_op(OpDef* op);  // throws on a duplicate name
}

// Creates and registers an op. Call it from a function-local static so the op exists before
// any kernel registrar or caller reaches it, whatever the static-initialisation order.
template <class A>
const Op<A>& define_op(OpSpec<A> spec) {
  auto* op = new Op<A>(std::move(spec));  // lives for the whole program, like the registry
  detail::register_op(op);
  return *op;
}

inline constexpr std::array<DType, 4> kFloatingTypes{kFloat32, kFloat64, kBFloat16, kFloat16};
inline constexpr std::array<DType, 8> kAllTypes{kBool,    kUInt8,    kInt32,   kInt64,
                                                kFloat16, kBFloat16, kFloat32, kFloat64};

// Registers a kernel for each dtype listed. Higher priority wins (an AVX-512 build of a kernel
// registers above the portable one; only the variants this CPU supports register at all).
template <class A>
struct KernelRegistrar {
  template <class DTypes>
  KernelRegistrar(const Op<A>& op, DeviceType device, const DTypes& dtypes,
                  typename Op<A>::Kernel fn, int priority = 0) {
    for (DType t : dtypes) {
      const_cast<Op<A>&>(op).set_kernel(device, t, reinterpret_cast<AnyFn>(fn), priority);
    }
  }
};

}  // namespace ath
