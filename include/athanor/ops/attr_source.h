// Calls whose attributes come from state that changes between steps: an optimizer's learning
// rate under a scheduler, its betas under a one-cycle policy. The caller passes the function that
// computes the attributes instead of their values; eagerly this is just call(op, inputs,
// attrs_of()). A graph tracer (athanor/graph) keeps the function with the recorded node, so a
// replayed step asks it again instead of reusing the value of the step it traced.
//
//   #include "athanor/ops/attr_source.h"
//   #include "athanor/ops/optimizer_updates.h"
//   double lr = 0.1;
//   Tensor p = ones({2}), g = ones({2});
//   Tensor lists[] = {p, g};
//   std::function<SgdUpdateAttrs()> attrs_of = [&] { return SgdUpdateAttrs{.lr = lr}; };
//   {
//     NoGradGuard no_grad;
//     call_with_attr_source(op_sgd_update(), TensorSpan(lists), attrs_of);
//   }
//   assert(p.to_vector<float>()[0] == 0.9f);
//
// The function must be cheap, have no side effects, and stay valid while a compiled step that
// traced it is used (an optimizer's functions capture the optimizer).
#pragma once

#include <functional>
#include <memory>

#include "athanor/ops/dispatch.h"

namespace ath {

// A type-erased attribute source: returns a fresh heap copy of the op's attribute struct.
using AttrSource = std::function<std::shared_ptr<const void>()>;

namespace detail {
// The source of the call now being dispatched on this thread (for the observer's on_op).
struct PendingAttrSource {
  const OpDef* op = nullptr;
  const AttrSource* source = nullptr;
};
extern thread_local PendingAttrSource t_pending_attr_source;
}  // namespace detail

// For an OpObserver inside on_op: the attribute source of the call it is told of, or null.
const AttrSource* current_attr_source(const OpDef& op);

template <class A>
Outputs call_with_attr_source(const Op<A>& op, TensorSpan inputs, std::function<A()> attrs_of) {
  const A attrs = attrs_of();
  if (detail::t_observer == nullptr) return call(op, inputs, attrs);
  const AttrSource source = [fn = std::move(attrs_of)]() -> std::shared_ptr<const void> {
    return std::make_shared<const A>(fn());
  };
  const detail::PendingAttrSource previous =
      std::exchange(detail::t_pending_attr_source, {&op, &source});
  try {
    Outputs out = call(op, inputs, attrs);
    detail::t_pending_attr_source = previous;
    return out;
  } catch (...) {
    detail::t_pending_attr_source = previous;
    throw;
  }
}

}  // namespace ath
