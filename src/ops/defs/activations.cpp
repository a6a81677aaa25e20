// Activation functions: definitions and backward formulas. The derivatives are built from
// registered ops and 0/1 masks (finite on both sides of every kink), so they differentiate again.
#include <numbers>

#include "pointwise_defs.h"

namespace ath {

using detail::as_float;
using detail::define_unary;
using detail::kSaveResult;
using detail::kSaveX;
using detail::UnaryRule;

namespace {
// x's gradient: g * f(x) for the derivative f the caller built.
void set_scaled(BackwardContext& ctx, const Tensor& f) {
  ctx.set_grad_input(0, mul(ctx.grad_output(0), f));
}
// A mask as 0/1 in the gradient's dtype.
Tensor fmask(BackwardContext& ctx, const Tensor& mask) {
  return as_float(mask, ctx.grad_output(0));
}
}  // namespace

const Op<NoAttrs>& op_relu() {
  static const auto& op = define_unary({.name = "relu",
                                        .rule = UnaryRule::SameNumeric,
                                        .save_outputs = kSaveResult,
                                        .backward = [](BackwardContext& c, const NoAttrs&) {
                                          set_scaled(c, fmask(c, gt(c.output(0), 0)));
                                        }});
  return op;
}

const Op<LeakyReluAttrs>& op_leaky_relu() {
  static const auto& op = define_op<LeakyReluAttrs>({
      .name = "leaky_relu",
      .kind = OpKind::Pointwise,
      .inplace = InplacePolicy::OverInput0,
      .save_inputs = kSaveX,
      .infer = detail::unary_spec<UnaryRule::SameFloating, LeakyReluAttrs>,
      .backward =
          [](BackwardContext& c, const LeakyReluAttrs& a) {  // 1 above 0, slope below
            const double s = a.negative_slope;
            set_scaled(c, add(mul(fmask(c, gt(c.input(0), 0)), 1 - s), s));
          },
  });
  return op;
}

const Op<EluAttrs>& op_elu() {
  static const auto& op = define_op<EluAttrs>({
      .name = "elu",
      .kind = OpKind::Pointwise,
      .inplace = InplacePolicy::OverInput0,
      .save_inputs = kSaveX,
      .infer = detail::unary_spec<UnaryRule::SameFloating, EluAttrs>,
      .backward =
          [](BackwardContext& c, const EluAttrs& a) {
            // scale above 0, scale * alpha * exp(x) below: exp of min(x, 0) keeps the unused
            // side finite for large x.
            const Tensor& x = c.input(0);
            Tensor pos = fmask(c, gt(x, 0));
            Tensor neg_side = mul(exp(clamp_max(x, 0)), a.scale * a.alpha);
            set_scaled(c, add(mul(pos, a.scale), mul(1 - pos, neg_side)));
          },
  });
  return op;
}

const Op<GeluAttrs>& op_gelu() {
  static const auto& op = define_op<GeluAttrs>({
      .name = "gelu",
      .kind = OpKind::Pointwise,
      .inplace = InplacePolicy::OverInput0,
      .save_inputs = kSaveX,
      .infer = detail::unary_spec<UnaryRule::SameFloating, GeluAttrs>,
      .backward =
          [](BackwardContext& c, const GeluAttrs& a) {
            const Tensor& x = c.input(0);
            if (a.approximate == GeluApprox::None) {  // g * (Phi(x) + x * phi(x)), fused
              return c.set_grad_input(0, call1(op_gelu_backward(), {c.grad_output(0), x}, a));
            }
            // 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2), t = tanh(k (x + c x^3))
            constexpr double k = std::numbers::sqrt2 * std::numbers::inv_sqrtpi, cub = 0.044715;
            Tensor x2 = mul(x, x);
            Tensor t = tanh(mul(add(x, mul(mul(x2, x), cub)), k));
            Tensor inner_d = mul(add(mul(x2, 3 * cub), 1), k);
            Tensor d = add(mul(add(t, 1), 0.5), mul(mul(mul(x, 1 - mul(t, t)), inner_d), 0.5));
            set_scaled(c, d);
          },
  });
  return op;
}

namespace {

// gelu_backward's and gelu_with_backward's checks of (g, x): the exact GELU, one shape, floating
// dtypes; their promoted dtype.
DType gelu_backward_dtype(TensorSpan in, const GeluAttrs& a) {
  ATH_CHECK(a.approximate == GeluApprox::None, ValueError,
            "only the exact GELU has a fused backward (tanh's is composed)");
  ATH_CHECK(in[0].shape() == in[1].shape(), ShapeError,
            "grad shape {} doesn't match the input shape {}", to_string(in[0].shape()),
            to_string(in[1].shape()));
  const DType t = promote_types(in[0].dtype(), in[1].dtype());
  ATH_CHECK(is_floating(t), DTypeError, "expected floating inputs, got {} and {}",
            dtype_name(in[0].dtype()), dtype_name(in[1].dtype()));
  return t;
}

}  // namespace

const Op<GeluAttrs>& op_gelu_with_backward() {
  static const auto& op = define_op<GeluAttrs>({
      .name = "gelu_with_backward",
      .num_inputs = 2,
      .num_outputs = 2,
      .inplace = InplacePolicy::EachOverItsInput,  // the gradient over g, the GELU over x
      .infer =
          [](TensorSpan in, const GeluAttrs& a) {
            const DType t = gelu_backward_dtype(in, a);
            ATH_CHECK(in[0].dtype() == in[1].dtype(), DTypeError,
                      "expected one floating dtype, got {} and {}", dtype_name(in[0].dtype()),
                      dtype_name(in[1].dtype()));
            return OutputSpec{{{in[0].shape(), t}, {in[1].shape(), t}}, t};
          },
      .not_differentiable = "made by the graph compiler's gelu_pair pass, inside a backward",
  });
  return op;
}

const Op<GeluAttrs>& op_gelu_backward() {
  static const auto& op = define_op<GeluAttrs>({
      .name = "gelu_backward",
      .kind = OpKind::Pointwise,
      .num_inputs = 2,
      .inplace = InplacePolicy::OverInput0,  // the memory plan writes it over the gradient
      .save_inputs = 0b11,
      .infer =
          [](TensorSpan in, const GeluAttrs& a) {
            const DType t = gelu_backward_dtype(in, a);
            return OutputSpec{{{in[0].shape(), t}}, t};
          },
      .backward =
          [](BackwardContext& c, const GeluAttrs& a) {
            // out = g * gelu'(x): linear in g; gelu''(x) = phi(x) * (2 - x^2).
            const Tensor& h = c.grad_output(0);
            const Tensor &g = c.input(0), &x = c.input(1);
            if (c.needs_grad(0)) c.set_grad_input(0, call1(op_gelu_backward(), {h, x}, a));
            if (c.needs_grad(1)) {
              Tensor x2 = mul(x, x);
              Tensor pdf = mul(exp(mul(x2, -0.5)), std::numbers::inv_sqrtpi / std::numbers::sqrt2);
              c.set_grad_input(1, mul(mul(mul(h, g), pdf), add(mul(x2, -1), 2)));
            }
          },
  });
  return op;
}

const Op<NoAttrs>& op_silu() {  // s (1 + x (1 - s)), s = sigmoid(x)
  static const auto& op = define_unary({.name = "silu",
                                        .rule = UnaryRule::SameFloating,
                                        .save_inputs = kSaveX,
                                        .backward = [](BackwardContext& c, const NoAttrs&) {
                                          const Tensor& x = c.input(0);
                                          Tensor s = sigmoid(x);
                                          set_scaled(c, mul(s, add(mul(x, 1 - s), 1)));
                                        }});
  return op;
}

const Op<NoAttrs>& op_mish() {  // t + x sigmoid(x) (1 - t^2), t = tanh(softplus(x))
  static const auto& op =
      define_unary({.name = "mish",
                    .rule = UnaryRule::SameFloating,
                    .save_inputs = kSaveX,
                    .backward = [](BackwardContext& c, const NoAttrs&) {
                      const Tensor& x = c.input(0);
                      Tensor t = tanh(softplus(x));
                      set_scaled(c, add(t, mul(mul(x, sigmoid(x)), 1 - mul(t, t))));
                    }});
  return op;
}

const Op<SoftplusAttrs>& op_softplus() {
  static const auto& op = define_op<SoftplusAttrs>({
      .name = "softplus",
      .kind = OpKind::Pointwise,
      .inplace = InplacePolicy::OverInput0,
      .save_inputs = kSaveX,
      .infer = detail::unary_spec<UnaryRule::SameFloating, SoftplusAttrs>,
      .backward =
          [](BackwardContext& c, const SoftplusAttrs& a) {  // sigmoid(beta x); 1 where linear
            Tensor bx = mul(c.input(0), a.beta);
            Tensor s = sigmoid(bx);
            Tensor linear = fmask(c, gt(bx, a.threshold));
            set_scaled(c, add(s, mul(linear, 1 - s)));
          },
  });
  return op;
}

const Op<HardtanhAttrs>& op_hardtanh() {
  static const auto& op = define_op<HardtanhAttrs>({
      .name = "hardtanh",
      .kind = OpKind::Pointwise,
      .inplace = InplacePolicy::OverInput0,
      .save_inputs = kSaveX,
      .infer =
          [](TensorSpan in, const HardtanhAttrs& a) {
            ATH_CHECK(in[0].dtype() != kUInt8 ||
                          (a.min_val.to_double() >= 0 && a.max_val.to_double() >= 0),
                      ValueError, "cannot do hardtanh on an unsigned type with negative limits");
            return detail::unary_spec<UnaryRule::SameNumeric>(in, a);
          },
      .backward =
          [](BackwardContext& c, const HardtanhAttrs& a) {  // 1 strictly inside the bounds
            const Tensor& x = c.input(0);
            set_scaled(c, fmask(c, logical_and(gt(x, a.min_val), lt(x, a.max_val))));
          },
  });
  return op;
}

const Op<NoAttrs>& op_hardsigmoid() {  // 1/6 strictly inside (-3, 3)
  static const auto& op =
      define_unary({.name = "hardsigmoid",
                    .rule = UnaryRule::SameFloating,
                    .save_inputs = kSaveX,
                    .backward = [](BackwardContext& c, const NoAttrs&) {
                      const Tensor& x = c.input(0);
                      set_scaled(c, mul(fmask(c, logical_and(gt(x, -3), lt(x, 3))), 1.0 / 6));
                    }});
  return op;
}

// 0 below -3, x/3 + 1/2 on [-3, 3), 1 from 3 up. At x = 3 torch's vectorized kernel (what
// tensors of more than a few elements get) gives 1 and its scalar tail 1.5; we follow the former.
const Op<NoAttrs>& op_hardswish() {
  static const auto& op = define_unary({.name = "hardswish",
                                        .rule = UnaryRule::SameFloating,
                                        .save_inputs = kSaveX,
                                        .backward = [](BackwardContext& c, const NoAttrs&) {
                                          const Tensor& x = c.input(0);
                                          Tensor mid = fmask(c, logical_and(ge(x, -3), lt(x, 3)));
                                          Tensor high = fmask(c, ge(x, 3));
                                          set_scaled(c, add(mul(mid, add(div(x, 3), 0.5)), high));
                                        }});
  return op;
}

Tensor relu(const Tensor& x) { return call1(op_relu(), {x}); }
Tensor leaky_relu(const Tensor& x, double negative_slope) {
  return call1(op_leaky_relu(), {x}, LeakyReluAttrs{.negative_slope = negative_slope});
}
Tensor elu(const Tensor& x, double alpha) {
  return call1(op_elu(), {x}, EluAttrs{.alpha = alpha, .scale = 1.0});
}
Tensor selu(const Tensor& x) {
  return call1(op_elu(), {x}, EluAttrs{.alpha = kSeluAlpha, .scale = kSeluScale});
}
Tensor gelu(const Tensor& x, GeluApprox approximate) {
  return call1(op_gelu(), {x}, GeluAttrs{.approximate = approximate});
}
Tensor silu(const Tensor& x) { return call1(op_silu(), {x}); }
Tensor mish(const Tensor& x) { return call1(op_mish(), {x}); }
Tensor softplus(const Tensor& x, double beta, double threshold) {
  return call1(op_softplus(), {x}, SoftplusAttrs{.beta = beta, .threshold = threshold});
}
Tensor hardtanh(const Tensor& x, const Scalar& min_val, const Scalar& max_val) {
  return call1(op_hardtanh(), {x}, HardtanhAttrs{.min_val = min_val, .max_val = max_val});
}
Tensor hardsigmoid(const Tensor& x) { return call1(op_hardsigmoid(), {x}); }
Tensor hardswish(const Tensor& x) { return call1(op_hardswish(), {x}); }

Tensor Tensor::relu() const { return ath::relu(*this); }

}  // namespace ath
