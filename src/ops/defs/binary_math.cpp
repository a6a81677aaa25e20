// Binary (and ternary) math ops: pow, maximum/minimum, fmod/remainder, lerp, clamp.
#include <cstdint>

#include "pointwise_defs.h"

namespace ath {

using detail::as_float;

namespace {

OutputSpec numeric_binary_spec(TensorSpan in) {
  OutputSpec s = binary_pointwise_spec(in);
  ATH_CHECK(s.kernel_dtype != kBool, DTypeError, "not implemented for bool tensors");
  return s;
}

// lerp does not promote: start, end (and weight) share one floating dtype.
Shape lerp_shape(TensorSpan in) {
  static constexpr const char* kNames[] = {"start", "end", "weight"};
  const DType t = in[0].dtype();
  ATH_CHECK(is_floating(t), DTypeError, "expected a floating tensor, got {}", dtype_name(t));
  Shape shape = in[0].shape();
  for (std::size_t i = 1; i < in.size(); ++i) {
    ATH_CHECK(in[i].dtype() == t, DTypeError, "expected dtype {} for `{}` but got dtype {}",
              dtype_name(t), kNames[i], dtype_name(in[i].dtype()));
    shape = broadcast_shapes(shape, in[i].shape());
  }
  return shape;
}

Scalar minus_one(const Scalar& s) {
  return s.is_floating() ? Scalar(s.to_double() - 1) : Scalar(s.to_int() - 1);
}

}  // namespace

// ---- pow ------------------------------------------------------------------------------------

const Op<NoAttrs>& op_pow() {
  static const auto& op = define_op<NoAttrs>({
      .name = "pow",
      .kind = OpKind::Pointwise,
      .num_inputs = 2,
      .inplace = InplacePolicy::OverInput0,
      .save_inputs = 0b11,
      .save_outputs = 0b1,
      .infer = [](TensorSpan in, const NoAttrs&) { return numeric_binary_spec(in); },
      .backward =
          [](BackwardContext& ctx, const NoAttrs&) {
            const Tensor& g = ctx.grad_output(0);
            const Tensor& a = ctx.input(0);
            // A bool exponent (float ** mask) takes part as 0/1 integers.
            const Tensor b = ctx.input(1).dtype() == kBool ? ctx.input(1).to(kInt64) : ctx.input(1);
            if (ctx.needs_grad(0)) {
              // b * a^(b-1), and 0 where b == 0 (the exponent is bumped to 0 there so that
              // 0 * 0^-1 does not make NaN).
              Tensor e = add(sub(b, 1), eq(b, 0));
              ctx.set_grad_input(0, sum_to(mul(g, mul(b, pow(a, e))), ctx.input_meta(0).shape));
            }
            if (ctx.needs_grad(1)) {
              // a^b * log(a), and 0 where a == 0 and b >= 0 (log is taken of 1 there).
              Tensor safe_a = add(a, logical_and(eq(a, 0), ge(b, 0)));
              Tensor gb = mul(g, mul(ctx.output(0), log(safe_a)));
              ctx.set_grad_input(1, sum_to(gb, ctx.input_meta(1).shape));
            }
          },
  });
  return op;
}

const Op<PowScalarAttrs>& op_pow_tensor_scalar() {
  static const auto& op = define_op<PowScalarAttrs>({
      .name = "pow_tensor_scalar",
      .kind = OpKind::Pointwise,
      .inplace = InplacePolicy::OverInput0,
      .save_inputs = 0b1,
      .infer =
          [](TensorSpan in, const PowScalarAttrs& a) {
            DType t = promote_with_scalar(in[0].dtype(), a.exponent.kind());
            ATH_CHECK(t != kBool, DTypeError, "not implemented for bool tensors");
            ATH_CHECK(is_floating(t) || a.exponent.to_int() >= 0, ValueError,
                      "Integers to negative integer powers are not allowed (exponent {})",
                      a.exponent.to_int());
            // As torch: the exponent must be representable in the integer result type.
            ATH_CHECK(!(t == kUInt8 && a.exponent.to_int() > 255) &&
                          !(t == kInt32 && a.exponent.to_int() > INT32_MAX),
                      ValueError, "exponent {} cannot be converted to {} without overflow",
                      a.exponent.to_int(), dtype_name(t));
            return OutputSpec{{{in[0].shape(), t}}, t};
          },
      .backward =
          [](BackwardContext& ctx, const PowScalarAttrs& a) {
            if (a.exponent.to_double() == 0) return detail::zero_backward(ctx);
            Tensor d = mul(pow(ctx.input(0), minus_one(a.exponent)), a.exponent);
            ctx.set_grad_input(0, mul(ctx.grad_output(0), d));
          },
  });
  return op;
}

Tensor pow(const Tensor& base, const Tensor& exponent) { return call1(op_pow(), {base, exponent}); }
Tensor pow(const Tensor& base, const Scalar& exponent) {
  return call1(op_pow_tensor_scalar(), {base}, PowScalarAttrs{.exponent = exponent});
}
Tensor pow(const Scalar& base, const Tensor& exponent) {
  return pow(wrap_scalar(base, exponent), exponent);
}
Tensor Tensor::pow(const Scalar& exponent) const { return ath::pow(*this, exponent); }

// ---- maximum, minimum -----------------------------------------------------------------------

namespace {
// The share of the gradient `a` gets: 1 where it wins, 1/2 on ties (as torch).
template <bool Max>
void max_min_backward(BackwardContext& ctx, const NoAttrs&) {
  const Tensor& g = ctx.grad_output(0);
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Tensor w = add(as_float(Max ? gt(a, b) : lt(a, b), g), mul(as_float(eq(a, b), g), 0.5));
  if (ctx.needs_grad(0)) ctx.set_grad_input(0, sum_to(mul(g, w), ctx.input_meta(0).shape));
  if (ctx.needs_grad(1)) ctx.set_grad_input(1, sum_to(mul(g, 1 - w), ctx.input_meta(1).shape));
}

OpSpec<NoAttrs> max_min_spec(const char* name, OpSpec<NoAttrs>::BackwardFn backward) {
  return {
      .name = name,
      .kind = OpKind::Pointwise,
      .num_inputs = 2,
      .inplace = InplacePolicy::OverInput0,
      .save_inputs = 0b11,
      .infer = [](TensorSpan in, const NoAttrs&) { return binary_pointwise_spec(in); },
      .backward = backward,
  };
}
}  // namespace

const Op<NoAttrs>& op_maximum() {
  static const auto& op = define_op(max_min_spec("maximum", max_min_backward<true>));
  return op;
}
const Op<NoAttrs>& op_minimum() {
  static const auto& op = define_op(max_min_spec("minimum", max_min_backward<false>));
  return op;
}
Tensor maximum(const Tensor& a, const Tensor& b) { return call1(op_maximum(), {a, b}); }
Tensor minimum(const Tensor& a, const Tensor& b) { return call1(op_minimum(), {a, b}); }

// ---- fmod, remainder ------------------------------------------------------------------------

namespace {
// a - b * round_fn(a / b): d/da = 1, d/db = -round_fn(a / b).
template <Tensor (*RoundFn)(const Tensor&)>
void mod_backward(BackwardContext& ctx, const NoAttrs&) {
  const Tensor& g = ctx.grad_output(0);
  if (ctx.needs_grad(0)) ctx.set_grad_input(0, sum_to(g, ctx.input_meta(0).shape));
  if (ctx.needs_grad(1)) {
    Tensor q = RoundFn(div(ctx.input(0), ctx.input(1)));
    ctx.set_grad_input(1, sum_to(neg(mul(g, q)), ctx.input_meta(1).shape));
  }
}

Tensor floor_fn(const Tensor& x) { return floor(x); }
Tensor trunc_fn(const Tensor& x) { return trunc(x); }

OpSpec<NoAttrs> mod_spec(const char* name, OpSpec<NoAttrs>::BackwardFn backward) {
  return {
      .name = name,
      .kind = OpKind::Pointwise,
      .num_inputs = 2,
      // Not written in place: an integer division by zero is found mid-kernel.
      .save_inputs = 0b11,
      .infer = [](TensorSpan in, const NoAttrs&) { return numeric_binary_spec(in); },
      .backward = backward,
  };
}
}  // namespace

const Op<NoAttrs>& op_fmod() {
  static const auto& op = define_op(mod_spec("fmod", mod_backward<trunc_fn>));
  return op;
}
const Op<NoAttrs>& op_remainder() {
  static const auto& op = define_op(mod_spec("remainder", mod_backward<floor_fn>));
  return op;
}
Tensor fmod(const Tensor& a, const Tensor& b) { return call1(op_fmod(), {a, b}); }
Tensor fmod(const Tensor& a, const Scalar& b) { return fmod(a, wrap_scalar(b, a)); }
Tensor remainder(const Tensor& a, const Tensor& b) { return call1(op_remainder(), {a, b}); }
Tensor remainder(const Tensor& a, const Scalar& b) { return remainder(a, wrap_scalar(b, a)); }

// ---- lerp -----------------------------------------------------------------------------------

const Op<LerpAttrs>& op_lerp_scalar() {
  static const auto& op = define_op<LerpAttrs>({
      .name = "lerp_scalar",
      .kind = OpKind::Pointwise,
      .num_inputs = 2,
      .inplace = InplacePolicy::OverInput0,
      .infer =
          [](TensorSpan in, const LerpAttrs&) {
            return OutputSpec{{{lerp_shape(in), in[0].dtype()}}, in[0].dtype()};
          },
      .backward =
          [](BackwardContext& ctx, const LerpAttrs& a) {
            const Tensor& g = ctx.grad_output(0);
            const double w = a.weight.to_double();
            if (ctx.needs_grad(0))
              ctx.set_grad_input(0, sum_to(mul(g, 1 - w), ctx.input_meta(0).shape));
            if (ctx.needs_grad(1))
              ctx.set_grad_input(1, sum_to(mul(g, w), ctx.input_meta(1).shape));
          },
  });
  return op;
}

const Op<NoAttrs>& op_lerp() {
  static const auto& op = define_op<NoAttrs>({
      .name = "lerp",
      .kind = OpKind::Pointwise,
      .num_inputs = 3,
      .inplace = InplacePolicy::OverInput0,
      .save_inputs = 0b111,
      .infer =
          [](TensorSpan in, const NoAttrs&) {
            return OutputSpec{{{lerp_shape(in), in[0].dtype()}}, in[0].dtype()};
          },
      .backward =
          [](BackwardContext& ctx, const NoAttrs&) {
            const Tensor& g = ctx.grad_output(0);
            const Tensor& w = ctx.input(2);
            if (ctx.needs_grad(0))
              ctx.set_grad_input(0, sum_to(mul(g, 1 - w), ctx.input_meta(0).shape));
            if (ctx.needs_grad(1))
              ctx.set_grad_input(1, sum_to(mul(g, w), ctx.input_meta(1).shape));
            if (ctx.needs_grad(2)) {
              Tensor gw = mul(g, sub(ctx.input(1), ctx.input(0)));
              ctx.set_grad_input(2, sum_to(gw, ctx.input_meta(2).shape));
            }
          },
  });
  return op;
}

Tensor lerp(const Tensor& start, const Tensor& end, const Scalar& weight) {
  return call1(op_lerp_scalar(), {start, end}, LerpAttrs{.weight = weight});
}
Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight) {
  return call1(op_lerp(), {start, end, weight});
}

// ---- clamp ----------------------------------------------------------------------------------

const Op<ClampAttrs>& op_clamp() {
  static const auto& op = define_op<ClampAttrs>({
      .name = "clamp",
      .kind = OpKind::Pointwise,
      .inplace = InplacePolicy::OverInput0,
      .save_inputs = 0b1,
      .infer =
          [](TensorSpan in, const ClampAttrs& a) {
            ATH_CHECK(a.min || a.max, ValueError,
                      "At least one of 'min' or 'max' must not be None");
            DType t = in[0].dtype();  // the bounds promote like Python scalars
            if (a.min) t = promote_with_scalar(t, a.min->kind());
            if (a.max) t = promote_with_scalar(t, a.max->kind());
            ATH_CHECK(t != kBool, DTypeError, "not implemented for bool tensors");
            return OutputSpec{{{in[0].shape(), t}}, t};
          },
      .backward =
          [](BackwardContext& ctx, const ClampAttrs& a) {
            // Passes where min <= x <= max (bounds included, as torch).
            const Tensor& x = ctx.input(0);
            Tensor inside;
            if (a.min) inside = ge(x, *a.min);
            if (a.max)
              inside = inside.defined() ? logical_and(inside, le(x, *a.max)) : le(x, *a.max);
            const Tensor& g = ctx.grad_output(0);
            ctx.set_grad_input(0, mul(g, as_float(inside, g)));
          },
  });
  return op;
}

Tensor clamp(const Tensor& x, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  return call1(op_clamp(), {x}, ClampAttrs{.min = min, .max = max});
}
Tensor clamp(const Tensor& x, const std::optional<Tensor>& min, const std::optional<Tensor>& max) {
  with_op_context(op_clamp(), [&] {
    ATH_CHECK(min || max, ValueError, "At least one of 'min' or 'max' must not be None");
  });
  // Tensor bounds broadcast and promote: exactly maximum then minimum (NaN bounds propagate,
  // as torch's clamp.Tensor does).
  Tensor r = min ? maximum(x, *min) : x;
  return max ? minimum(r, *max) : r;
}
Tensor clamp_min(const Tensor& x, const Scalar& min) { return clamp(x, min, std::nullopt); }
Tensor clamp_max(const Tensor& x, const Scalar& max) { return clamp(x, std::nullopt, max); }

}  // namespace ath
