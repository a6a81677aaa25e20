// add (with alpha), sub, mul, div, neg: definitions and backward formulas.
#include "athanor/ops/copy.h"
#include "athanor/ops/creation.h"
#include "athanor/ops/dispatch.h"
#include "athanor/ops/pointwise.h"
#include "athanor/ops/reduction.h"

namespace ath {

OutputSpec binary_pointwise_spec(TensorSpan in) {
  Shape shape = broadcast_shapes(in[0].shape(), in[1].shape());
  DType t = result_type(in);
  return OutputSpec{{{shape, t}}, t};
}

OutputSpec binary_float_spec(TensorSpan in) {
  OutputSpec s = binary_pointwise_spec(in);
  if (!is_floating(s.kernel_dtype)) s.kernel_dtype = s.outputs[0].dtype = kFloat32;
  return s;
}

Tensor wrap_scalar(const Scalar& s, const Tensor& like) {
  // A scalar operand is a constant of the call it feeds, not a call of its own: an observer (a
  // tracer) sees `t * 2` as one call with a constant input.
  detail::ObserverPause observer_pause;
  return scalar_tensor(s, promote_with_scalar(like.dtype(), s.kind()));
}

const Op<AlphaAttrs>& op_add() {
  static const auto& op = define_op<AlphaAttrs>({
      .name = "add",
      .kind = OpKind::Pointwise,
      .num_inputs = 2,
      .inplace = InplacePolicy::OverInput0,
      .infer =
          [](TensorSpan in, const AlphaAttrs& a) {
            ATH_CHECK(!(a.alpha.is_floating() && !is_floating(result_type(in))), DTypeError,
                      "a floating alpha needs a floating result, got {} and {}",
                      dtype_name(in[0].dtype()), dtype_name(in[1].dtype()));
            return binary_pointwise_spec(in);
          },
      .backward =
          [](BackwardContext& ctx, const AlphaAttrs& a) {
            const Tensor& g = ctx.grad_output(0);
            if (ctx.needs_grad(0)) ctx.set_grad_input(0, sum_to(g, ctx.input_meta(0).shape));
            if (ctx.needs_grad(1)) {
              Tensor gb = a.alpha.to_double() == 1.0 ? g : mul(g, a.alpha);
              ctx.set_grad_input(1, sum_to(gb, ctx.input_meta(1).shape));
            }
          },
  });
  return op;
}

const Op<NoAttrs>& op_mul() {
  static const auto& op = define_op<NoAttrs>({
      .name = "mul",
      .kind = OpKind::Pointwise,
      .num_inputs = 2,
      .inplace = InplacePolicy::OverInput0,
      .save_inputs = 0b11,
      .infer = [](TensorSpan in, const NoAttrs&) { return binary_pointwise_spec(in); },
      .backward =
          [](BackwardContext& ctx, const NoAttrs&) {
            const Tensor& g = ctx.grad_output(0);
            if (ctx.needs_grad(0)) {
              ctx.set_grad_input(0, sum_to(mul(g, ctx.input(1)), ctx.input_meta(0).shape));
            }
            if (ctx.needs_grad(1)) {
              ctx.set_grad_input(1, sum_to(mul(g, ctx.input(0)), ctx.input_meta(1).shape));
            }
          },
  });
  return op;
}

const Op<NoAttrs>& op_div() {
  static const auto& op = define_op<NoAttrs>({
      .name = "div",
      .kind = OpKind::Pointwise,
      .num_inputs = 2,
      .inplace = InplacePolicy::OverInput0,
      .save_inputs = 0b11,
      .infer = [](TensorSpan in, const NoAttrs&) { return binary_float_spec(in); },
      .backward =
          [](BackwardContext& ctx, const NoAttrs&) {
            const Tensor& g = ctx.grad_output(0);
            const Tensor& b = ctx.input(1);
            if (ctx.needs_grad(0))
              ctx.set_grad_input(0, sum_to(div(g, b), ctx.input_meta(0).shape));
            if (ctx.needs_grad(1)) {  // d(a/b)/db = -a / b^2
              Tensor gb = neg(div(mul(g, ctx.input(0)), mul(b, b)));
              ctx.set_grad_input(1, sum_to(gb, ctx.input_meta(1).shape));
            }
          },
  });
  return op;
}

const Op<NoAttrs>& op_neg() {
  static const auto& op = define_op<NoAttrs>({
      .name = "neg",
      .kind = OpKind::Pointwise,
      .inplace = InplacePolicy::OverInput0,
      .infer =
          [](TensorSpan in, const NoAttrs&) {
            ATH_CHECK(in[0].dtype() != kBool, DTypeError,
                      "negation of a bool tensor is not supported; use logical_not");
            return OutputSpec{{{in[0].shape(), in[0].dtype()}}, in[0].dtype()};
          },
      .backward = [](BackwardContext& ctx,
                     const NoAttrs&) { ctx.set_grad_input(0, neg(ctx.grad_output(0))); },
  });
  return op;
}

Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return call1(op_add(), {a, b}, AlphaAttrs{.alpha = alpha});
}
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  return add(a, wrap_scalar(b, a), alpha);
}
namespace {
// torch refuses a bool operand on either side (a mask is inverted with logical_not).
void check_sub_operands(DType a, DType b) {
  ATH_CHECK(a != kBool && b != kBool, DTypeError,
            "sub: subtraction with a bool tensor is not supported; use logical_xor or "
            "logical_not, got {} and {}",
            dtype_name(a), dtype_name(b));
}
}  // namespace

Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  check_sub_operands(a.dtype(), b.dtype());
  Scalar neg_alpha = alpha.is_floating() ? Scalar(-alpha.to_double()) : Scalar(-alpha.to_int());
  return add(a, b, neg_alpha);
}
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  check_sub_operands(a.dtype(), b.kind() == ScalarKind::Bool ? kBool : a.dtype());
  return sub(a, wrap_scalar(b, a), alpha);
}
Tensor mul(const Tensor& a, const Tensor& b) { return call1(op_mul(), {a, b}); }
Tensor mul(const Tensor& a, const Scalar& b) { return mul(a, wrap_scalar(b, a)); }
Tensor div(const Tensor& a, const Tensor& b) { return call1(op_div(), {a, b}); }
Tensor div(const Tensor& a, const Scalar& b) { return div(a, wrap_scalar(b, a)); }
Tensor neg(const Tensor& a) { return call1(op_neg(), {a}); }

// ---- Tensor methods and operators -----------------------------------------------------------

Tensor Tensor::add(const Tensor& o, const Scalar& alpha) const { return ath::add(*this, o, alpha); }
Tensor Tensor::sub(const Tensor& o, const Scalar& alpha) const { return ath::sub(*this, o, alpha); }
Tensor Tensor::mul(const Tensor& o) const { return ath::mul(*this, o); }
Tensor Tensor::div(const Tensor& o) const { return ath::div(*this, o); }
Tensor Tensor::neg() const { return ath::neg(*this); }

Tensor& Tensor::add_(const Tensor& o, const Scalar& alpha) {
  Tensor in[2] = {*this, o};
  return call_inplace(op_add(), *this, TensorSpan(in), AlphaAttrs{.alpha = alpha});
}
Tensor& Tensor::sub_(const Tensor& o, const Scalar& alpha) {
  check_sub_operands(dtype(), o.dtype());
  Scalar neg_alpha = alpha.is_floating() ? Scalar(-alpha.to_double()) : Scalar(-alpha.to_int());
  return add_(o, neg_alpha);
}
Tensor& Tensor::mul_(const Tensor& o) {
  Tensor in[2] = {*this, o};
  return call_inplace(op_mul(), *this, TensorSpan(in), NoAttrs{});
}
Tensor& Tensor::mul_(const Scalar& o) { return mul_(wrap_scalar(o, *this)); }
Tensor& Tensor::div_(const Tensor& o) {
  Tensor in[2] = {*this, o};
  return call_inplace(op_div(), *this, TensorSpan(in), NoAttrs{});
}

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator+(const Tensor& a, const Scalar& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Scalar& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Scalar& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Scalar& b) { return div(a, b); }
Tensor operator+(const Scalar& a, const Tensor& b) { return add(b, a); }
Tensor operator-(const Scalar& a, const Tensor& b) { return add(neg(b), a); }
Tensor operator*(const Scalar& a, const Tensor& b) { return mul(b, a); }
Tensor operator/(const Scalar& a, const Tensor& b) { return div(wrap_scalar(a, b), b); }
Tensor operator-(const Tensor& a) { return neg(a); }

}  // namespace ath
