// call_inplace, split from dispatch.h to keep that header readable.
#pragma once

#include "athanor/ops/dispatch.h"

namespace ath {

namespace detail {
// Validates that op's result (spec) can be written into self: same shape, castable dtype.
void check_inplace_target(const OpDef& op, const Tensor& self, const OutputSpec& spec);
// The autograd-aware slow path: out-of-place result copied into self, history rebased.
void rebase_inplace(const OpDef& op, Tensor& self, const Tensor& result);
void check_inplace_autograd(const OpDef& op, const Tensor& self);
void copy_into(Tensor& dst, const Tensor& src);  // dst.copy_(src) without recording
// The inputs with input 0 replaced by a clone, when backward reads input 0 (it is about to be
// overwritten).
std::vector<Tensor> protect_saved_self(const OpDef& op, TensorSpan inputs);
// The no-autograd path: the kernel writes self directly when it can, else computes and copies.
template <class A>
void call_inplace_without_autograd(const Op<A>& op, Tensor& self, TensorSpan inputs,
                                   const A& attrs);
}  // namespace detail

template <class A>
Tensor& call_inplace(const Op<A>& op, Tensor& self, TensorSpan inputs, const A& attrs) {
  detail::AutocastPause autocast_pause;  // in place writes self's dtype: nothing to cast
  const bool record =
      GradMode::is_enabled() && op.differentiable && detail::any_requires_grad(inputs);
  if (record) {
    detail::check_inplace_autograd(op, self);
    detail::ObserverPause observer_pause;  // the observer sees the in-place call, below
    std::vector<Tensor> protected_inputs = detail::protect_saved_self(op, inputs);
    Tensor result = call1(op, TensorSpan(protected_inputs), attrs);
    detail::rebase_inplace(op, self, result);
  } else {
    detail::call_inplace_without_autograd(op, self, inputs, attrs);
  }
  if (detail::t_observer != nullptr) [[unlikely]] {
    detail::t_observer->on_op(op, inputs, std::span<const Tensor>(&self, 1), &attrs);
  }
  return self;
}

namespace detail {

template <class A>
void call_inplace_without_autograd(const Op<A>& op, Tensor& self, TensorSpan inputs,
                                   const A& attrs) {
  try {
    const Device device = detail::check_inputs(op, inputs);
    ATH_CHECK(inputs.empty() || self.device() == device, ValueError,
              "cannot write a {} result into a tensor on {}", to_string(device),
              to_string(self.device()));
    OutputSpec spec = op.spec().infer(inputs, attrs);
    detail::check_inplace_target(op, self, spec);
    // Pointwise kernels write any strided output, so only other kinds need a contiguous self.
    bool direct = op.inplace == InplacePolicy::OverInput0 &&
                  (op.kind == OpKind::Pointwise || self.is_contiguous()) &&
                  spec.outputs[0].dtype == self.dtype();
    KernelScope kernel_scope;  // both paths: one on_op (the caller's), no graph
    if (direct) {
      std::vector<Tensor> converted;
      TensorSpan kernel_inputs = detail::promote(op, inputs, spec.kernel_dtype, converted);
      auto kernel = op.typed_kernel(self.device().type, spec.kernel_dtype);
      if (kernel == nullptr) detail::missing_kernel(op, self.device().type, spec.kernel_dtype);
      Tensor out = self;
      detail::WorkspaceScope workspace(
          op.spec().workspace != nullptr ? op.spec().workspace(kernel_inputs, attrs) : 0,
          self.device());
      kernel(kernel_inputs, std::span<Tensor>(&out, 1), attrs);
      self.bump_version();
    } else {
      detail::copy_into(self, call1(op, inputs, attrs));
    }
  } catch (Error& e) {
    detail::add_context(e, op);
    throw;
  }
}

}  // namespace detail

template <class A>
void Op<A>::run_inplace(Tensor& self, TensorSpan inputs, const void* attrs) const {
  detail::call_inplace_without_autograd(*this, self, inputs, *static_cast<const A*>(attrs));
}

}  // namespace ath
