// softmax, log_softmax and their backward ops: definitions and gradient formulas.
#include "athanor/ops/copy.h"
#include "athanor/ops/dispatch.h"
#include "athanor/ops/nn_functional.h"
#include "athanor/ops/pointwise.h"
#include "athanor/ops/reduction.h"

namespace ath {

namespace {

OutputSpec softmax_spec(TensorSpan in, const SoftmaxAttrs& a) {
  normalize_dim(a.dim, in[0].dim());  // validates
  DType t = in[0].dtype();
  ATH_CHECK(is_floating(t), DTypeError, "expected a floating input, got {} (shape {})",
            dtype_name(t), to_string(in[0].shape()));
  return OutputSpec{{{in[0].shape(), t}}, t};
}

// Backward ops take (g, y) of one shape.
OutputSpec softmax_backward_spec(TensorSpan in, const SoftmaxAttrs& a) {
  ATH_CHECK(in[0].shape() == in[1].shape(), ShapeError,
            "grad shape {} doesn't match the output shape {}", to_string(in[0].shape()),
            to_string(in[1].shape()));
  normalize_dim(a.dim, in[0].dim());
  DType t = promote_types(in[0].dtype(), in[1].dtype());
  ATH_CHECK(is_floating(t), DTypeError, "expected floating inputs, got {} and {}",
            dtype_name(in[0].dtype()), dtype_name(in[1].dtype()));
  return OutputSpec{{{in[0].shape(), t}}, t};
}

Tensor dim_sum(const Tensor& t, int64_t dim) { return sum(t, {dim}, /*keepdim=*/true); }

}  // namespace

const Op<SoftmaxAttrs>& op_softmax() {
  static const auto& op = define_op<SoftmaxAttrs>({
      .name = "softmax",
      .kind = OpKind::Opaque,
      .autocast = AutocastPolicy::Float32,
      .save_outputs = 0b1,
      .infer = softmax_spec,
      .backward =
          [](BackwardContext& ctx, const SoftmaxAttrs& a) {
            ctx.set_grad_input(
                0, call1(op_softmax_backward(), {ctx.grad_output(0), ctx.output(0)}, a));
          },
  });
  return op;
}

const Op<SoftmaxAttrs>& op_log_softmax() {
  static const auto& op = define_op<SoftmaxAttrs>({
      .name = "log_softmax",
      .kind = OpKind::Opaque,
      .autocast = AutocastPolicy::Float32,
      .save_outputs = 0b1,
      .infer = softmax_spec,
      .backward =
          [](BackwardContext& ctx, const SoftmaxAttrs& a) {
            ctx.set_grad_input(
                0, call1(op_log_softmax_backward(), {ctx.grad_output(0), ctx.output(0)}, a));
          },
  });
  return op;
}

const Op<SoftmaxAttrs>& op_softmax_backward() {
  static const auto& op = define_op<SoftmaxAttrs>({
      .name = "softmax_backward",
      .kind = OpKind::Opaque,
      .num_inputs = 2,
      .save_inputs = 0b11,
      .infer = softmax_backward_spec,
      .backward =
          [](BackwardContext& ctx, const SoftmaxAttrs& a) {
            // out = y * (g - s), s = sum(g * y): linear in g with the same Jacobian as the
            // forward (so d/dg is softmax_backward again); d/dy = h * (g - s) - g * sum(h * y).
            const Tensor& h = ctx.grad_output(0);
            const Tensor& g = ctx.input(0);
            const Tensor& y = ctx.input(1);
            if (ctx.needs_grad(0)) ctx.set_grad_input(0, call1(op_softmax_backward(), {h, y}, a));
            if (ctx.needs_grad(1)) {
              Tensor s = dim_sum(g * y, a.dim);
              ctx.set_grad_input(1, h * (g - s) - g * dim_sum(h * y, a.dim));
            }
          },
  });
  return op;
}

const Op<SoftmaxAttrs>& op_log_softmax_backward() {
  static const auto& op = define_op<SoftmaxAttrs>({
      .name = "log_softmax_backward",
      .kind = OpKind::Opaque,
      .num_inputs = 2,
      .save_inputs = 0b11,
      .infer = softmax_backward_spec,
      .backward =
          [](BackwardContext& ctx, const SoftmaxAttrs& a) {
            // out = g - exp(y) * sum(g). y is a log_softmax output, so exp(y) == softmax(y):
            // that form needs no separate exp op and is differentiable through our own kernels.
            const Tensor& h = ctx.grad_output(0);
            const Tensor& g = ctx.input(0);
            const Tensor& y = ctx.input(1);
            Tensor p = softmax(y, a.dim);
            if (ctx.needs_grad(0)) ctx.set_grad_input(0, h - dim_sum(h * p, a.dim));
            if (ctx.needs_grad(1)) ctx.set_grad_input(1, -(h * p * dim_sum(g, a.dim)));
          },
  });
  return op;
}

Tensor softmax(const Tensor& x, int64_t dim) {
  int64_t d = with_op_context(op_softmax(), [&] { return normalize_dim(dim, x.dim()); });
  return call1(op_softmax(), {x}, SoftmaxAttrs{.dim = d});
}

Tensor log_softmax(const Tensor& x, int64_t dim) {
  int64_t d = with_op_context(op_log_softmax(), [&] { return normalize_dim(dim, x.dim()); });
  return call1(op_log_softmax(), {x}, SoftmaxAttrs{.dim = d});
}

}  // namespace ath
