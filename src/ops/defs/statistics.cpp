// var, std, logsumexp, norm: definitions and backward formulas.
#include <cmath>

#include "athanor/ops/comparison.h"
#include "athanor/ops/creation.h"
#include "athanor/ops/dispatch.h"
#include "athanor/ops/pointwise.h"
#include "athanor/ops/reduction_aux.h"
#include "reduce_common.h"

namespace ath {

namespace {

OutputSpec var_spec(TensorSpan in, const VarAttrs& a) {
  detail::check_floating(in[0].dtype(), "var/std");
  detail::check_dims_in_range(a.dims, in[0].dim());
  DType t = in[0].dtype();
  return OutputSpec{{{reduced_shape(in[0].shape(), a.dims, a.keepdim), t}}, t};
}

double var_divisor(const Shape& s, const VarAttrs& a) {
  return std::max(0.0, static_cast<double>(reduced_count(s, a.dims)) - a.correction);
}

// d var / dx = 2 (x - mean) / (N - correction).
void var_backward(BackwardContext& ctx, const VarAttrs& a) {
  const Tensor& x = ctx.input(0);
  Tensor g = keepdim_view(ctx.grad_output(0), x.shape(), a.dims, a.keepdim);
  Tensor centered = sub(x, mean(x, a.dims, /*keepdim=*/true));
  ctx.set_grad_input(0, mul(mul(g, centered), 2.0 / var_divisor(x.shape(), a)));
}

// d std / dx = (x - mean) / (std (N - correction)); 0 where std is 0, as PyTorch.
void std_backward(BackwardContext& ctx, const VarAttrs& a) {
  const Tensor& x = ctx.input(0);
  Tensor g = keepdim_view(ctx.grad_output(0), x.shape(), a.dims, a.keepdim);
  Tensor y =
      keepdim_view(detail::output_for_backward(ctx, 0, [&] { return call1(op_std(), {x}, a); }),
                   x.shape(), a.dims, a.keepdim);
  Tensor scale = mul(g, reduction_aux(y, {.fn = AuxFn::Recip0}));
  Tensor centered = sub(x, mean(x, a.dims, /*keepdim=*/true));
  ctx.set_grad_input(0, mul(mul(scale, centered), 1.0 / var_divisor(x.shape(), a)));
}

void norm_backward(BackwardContext& ctx, const NormAttrs& a) {
  const Tensor& x = ctx.input(0);
  Tensor g = keepdim_view(ctx.grad_output(0), x.shape(), a.dims, a.keepdim);
  Tensor y =
      keepdim_view(detail::output_for_backward(ctx, 0, [&] { return call1(op_norm(), {x}, a); }),
                   x.shape(), a.dims, a.keepdim);
  const double p = a.p;
  Tensor grad;
  if (p == 0) {
    return;  // counts nonzeros: piecewise constant
  } else if (p == 1) {
    grad = mul(g, reduction_aux(x, {.fn = AuxFn::SignPow, .q = 0}));
  } else if (p == 2) {  // x g / y, 0 where the norm is 0
    grad = mul(x, mul(g, reduction_aux(y, {.fn = AuxFn::Recip0})));
  } else if (std::isinf(p)) {  // sign(x) g, split evenly among the extremal |x|
    Tensor mask = eq(reduction_aux(x, {.fn = AuxFn::AbsPow, .q = 1}), y);
    Tensor count = sum(mask, a.dims, /*keepdim=*/true);
    grad = div(mul(mul(g, reduction_aux(x, {.fn = AuxFn::SignPow, .q = 0})), mask), count);
  } else {  // sign(x) |x|^(p-1) g / y^(p-1), 0 where x or the norm is 0
    Tensor inv =
        reduction_aux(reduction_aux(y, {.fn = AuxFn::AbsPow, .q = p - 1}), {.fn = AuxFn::Recip0});
    grad = mul(reduction_aux(x, {.fn = AuxFn::SignPow, .q = p - 1}), mul(g, inv));
  }
  ctx.set_grad_input(0, grad);
}

}  // namespace

const Op<VarAttrs>& op_var() {
  static const auto& op = define_op<VarAttrs>({
      .name = "var",
      .kind = OpKind::Reduce,
      .autocast = AutocastPolicy::Float32,
      .save_inputs = 0b1,
      .infer = var_spec,
      .backward = var_backward,
  });
  return op;
}

const Op<VarAttrs>& op_std() {
  static const auto& op = define_op<VarAttrs>({
      .name = "std",
      .kind = OpKind::Reduce,
      .autocast = AutocastPolicy::Float32,
      .save_inputs = 0b1,
      .save_outputs = 0b1,
      .infer = var_spec,
      .backward = std_backward,
  });
  return op;
}

const Op<ReduceAttrs>& op_logsumexp() {
  static const auto& op = define_op<ReduceAttrs>({
      .name = "logsumexp",
      .kind = OpKind::Reduce,
      .autocast = AutocastPolicy::Float32,
      .save_inputs = 0b1,
      .save_outputs = 0b1,
      .infer =
          [](TensorSpan in, const ReduceAttrs& a) {
            detail::check_dims_in_range(a.dims, in[0].dim());
            DType t = is_floating(in[0].dtype()) ? in[0].dtype() : kFloat32;
            return OutputSpec{{{reduced_shape(in[0].shape(), a.dims, a.keepdim), t}}, t};
          },
      .backward =
          [](BackwardContext& ctx, const ReduceAttrs& a) {  // g exp(x - y)
            const Tensor& x = ctx.input(0);
            Tensor g = keepdim_view(ctx.grad_output(0), x.shape(), a.dims, a.keepdim);
            Tensor y = keepdim_view(
                detail::output_for_backward(ctx, 0, [&] { return call1(op_logsumexp(), {x}, a); }),
                x.shape(), a.dims, a.keepdim);
            ctx.set_grad_input(0, mul(g, exp(sub(x, y))));
          },
  });
  return op;
}

const Op<NormAttrs>& op_norm() {
  static const auto& op = define_op<NormAttrs>({
      .name = "norm",
      .kind = OpKind::Reduce,
      .autocast = AutocastPolicy::Float32,
      .save_inputs = 0b1,
      .save_outputs = 0b1,
      .infer =
          [](TensorSpan in, const NormAttrs& a) {
            detail::check_floating(in[0].dtype(), "norm");
            detail::check_dims_in_range(a.dims, in[0].dim());
            ATH_CHECK(!std::isnan(a.p), ValueError, "p must not be nan");
            if (std::isinf(a.p)) detail::check_nonempty_reduction(in[0].shape(), a.dims);
            DType t = in[0].dtype();
            return OutputSpec{{{reduced_shape(in[0].shape(), a.dims, a.keepdim), t}}, t};
          },
      .backward = norm_backward,
  });
  return op;
}

namespace {
template <class A>
A with_dims(const OpDef& op, const Tensor& x, A attrs) {
  attrs.dims = with_op_context(op, [&] { return normalize_dims(attrs.dims, x.dim()); });
  return attrs;
}
}  // namespace

Tensor var(const Tensor& x, const DimList& dims, double correction, bool keepdim) {
  VarAttrs a = with_dims(op_var(), x, VarAttrs{dims, correction, keepdim});
  return call1(op_var(), {x}, a);
}
Tensor std(const Tensor& x, const DimList& dims, double correction, bool keepdim) {
  VarAttrs a = with_dims(op_std(), x, VarAttrs{dims, correction, keepdim});
  return call1(op_std(), {x}, a);
}
Tensor logsumexp(const Tensor& x, const DimList& dims, bool keepdim) {
  ReduceAttrs a = with_dims(op_logsumexp(), x, ReduceAttrs{.dims = dims, .keepdim = keepdim});
  return call1(op_logsumexp(), {x}, a);
}
Tensor norm(const Tensor& x, double p, const DimList& dims, bool keepdim) {
  NormAttrs a = with_dims(op_norm(), x, NormAttrs{p, dims, keepdim});
  return call1(op_norm(), {x}, a);
}

}  // namespace ath
