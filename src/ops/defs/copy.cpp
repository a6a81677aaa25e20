// Definitions of the copy ops: to_dtype, clone, copy (the target of copy_).
#include "athanor/ops/copy.h"

#include "athanor/ops/creation.h"
#include "athanor/ops/dispatch.h"
#include "athanor/ops/reduction.h"

namespace ath {

const Op<ToDTypeAttrs>& op_to_dtype() {
  static const auto& op = define_op<ToDTypeAttrs>({
      .name = "to_dtype",
      .kind = OpKind::Pointwise,
      .promote_inputs = 0,
      .infer =
          [](TensorSpan in, const ToDTypeAttrs& a) {
            // The kernel is chosen by the *source* dtype; it writes any destination dtype.
            return OutputSpec{{{in[0].shape(), a.dtype}}, in[0].dtype()};
          },
      .backward =
          [](BackwardContext& ctx, const ToDTypeAttrs&) {
            // Gradient flows back to a floating source only; the engine converts it to the
            // input's dtype.
            ctx.set_grad_input(0, ctx.grad_output(0));
          },
  });
  return op;
}

const Op<NoAttrs>& op_clone() {
  static const auto& op = define_op<NoAttrs>({
      .name = "clone",
      .kind = OpKind::Pointwise,
      .inplace = InplacePolicy::OverInput0,
      .infer =
          [](TensorSpan in, const NoAttrs&) {
            return OutputSpec{{{in[0].shape(), in[0].dtype()}}, in[0].dtype()};
          },
      .backward = [](BackwardContext& ctx,
                     const NoAttrs&) { ctx.set_grad_input(0, ctx.grad_output(0)); },
  });
  return op;
}

const Op<NoAttrs>& op_copy() {
  static const auto& op = define_op<NoAttrs>({
      .name = "copy",
      .kind = OpKind::Pointwise,
      .num_inputs = 2,  // (dst, src): output has dst's shape and dtype, values from src
      .inplace = InplacePolicy::OverInput0,
      .promote_inputs = 0,
      .infer =
          [](TensorSpan in, const NoAttrs&) {
            Shape b = broadcast_shapes(in[0].shape(), in[1].shape());
            ATH_CHECK(b == in[0].shape(), ShapeError, "source shape {} can't be broadcast to {}",
                      to_string(in[1].shape()), to_string(in[0].shape()));
            return OutputSpec{{{in[0].shape(), in[0].dtype()}}, in[1].dtype()};
          },
      .backward =
          [](BackwardContext& ctx, const NoAttrs&) {
            // dst's old values are overwritten: no gradient flows to them.
            if (ctx.needs_grad(0)) ctx.set_grad_input(0, zeros_like(ctx.grad_output(0)));
            if (ctx.needs_grad(1)) {
              ctx.set_grad_input(1, sum_to(ctx.grad_output(0), ctx.input_meta(1).shape));
            }
          },
  });
  return op;
}

Tensor to_dtype(const Tensor& x, DType dtype) {
  return call1(op_to_dtype(), {x}, ToDTypeAttrs{.dtype = dtype});
}
Tensor clone(const Tensor& x) { return call1(op_clone(), {x}); }
Tensor contiguous(const Tensor& x) { return x.is_contiguous() ? x : clone(x); }

Tensor& copy_(Tensor& dst, const Tensor& src) {
  Tensor inputs[2] = {dst, src};
  return call_inplace(op_copy(), dst, TensorSpan(inputs), NoAttrs{});
}

Tensor Tensor::contiguous() const { return ath::contiguous(*this); }
Tensor Tensor::clone() const { return ath::clone(*this); }
Tensor Tensor::to(DType dtype) const {
  return dtype == this->dtype() ? *this : to_dtype(*this, dtype);
}
Tensor& Tensor::copy_(const Tensor& src) { return ath::copy_(*this, src); }

}  // namespace ath
