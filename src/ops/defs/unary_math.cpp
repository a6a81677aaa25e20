// Unary math ops with a floating result (exp, log, sin, sigmoid, ...), abs and sign, and the
// rounding ops. Each op is one define_unary call: the dtype rule, what backward reads, and the
// derivative written with registered ops (so it is differentiable again).
#include <numbers>

#include "pointwise_defs.h"

namespace ath {

using detail::define_unary;
using detail::kSaveResult;
using detail::kSaveX;
using detail::UnaryRule;

namespace {
constexpr double kLn2 = std::numbers::ln2;
}  // namespace

// ---- floating result ------------------------------------------------------------------------

const Op<NoAttrs>& op_exp() {
  static const auto& op = define_unary(
      {.name = "exp",
       .rule = UnaryRule::FloatResult,
       .save_outputs = kSaveResult,
       .backward = [](BackwardContext& c,
                      const NoAttrs&) { c.set_grad_input(0, mul(c.grad_output(0), c.output(0))); },
       .autocast = AutocastPolicy::Float32});
  return op;
}

const Op<NoAttrs>& op_exp2() {
  static const auto& op =
      define_unary({.name = "exp2",
                    .rule = UnaryRule::FloatResult,
                    .save_outputs = kSaveResult,
                    .backward = [](BackwardContext& c, const NoAttrs&) {
                      c.set_grad_input(0, mul(c.grad_output(0), mul(c.output(0), kLn2)));
                    }});
  return op;
}

const Op<NoAttrs>& op_log() {
  static const auto& op = define_unary(
      {.name = "log",
       .rule = UnaryRule::FloatResult,
       .save_inputs = kSaveX,
       .backward = [](BackwardContext& c,
                      const NoAttrs&) { c.set_grad_input(0, div(c.grad_output(0), c.input(0))); },
       .autocast = AutocastPolicy::Float32});
  return op;
}

const Op<NoAttrs>& op_log2() {
  static const auto& op =
      define_unary({.name = "log2",
                    .rule = UnaryRule::FloatResult,
                    .save_inputs = kSaveX,
                    .backward = [](BackwardContext& c, const NoAttrs&) {
                      c.set_grad_input(0, div(c.grad_output(0), mul(c.input(0), kLn2)));
                    }});
  return op;
}

const Op<NoAttrs>& op_log1p() {
  static const auto& op =
      define_unary({.name = "log1p",
                    .rule = UnaryRule::FloatResult,
                    .save_inputs = kSaveX,
                    .backward =
                        [](BackwardContext& c, const NoAttrs&) {
                          c.set_grad_input(0, div(c.grad_output(0), add(c.input(0), 1)));
                        },
                    .autocast = AutocastPolicy::Float32});
  return op;
}

const Op<NoAttrs>& op_expm1() {
  static const auto& op =
      define_unary({.name = "expm1",
                    .rule = UnaryRule::FloatResult,
                    .save_outputs = kSaveResult,
                    .backward =
                        [](BackwardContext& c, const NoAttrs&) {
                          c.set_grad_input(0, mul(c.grad_output(0), add(c.output(0), 1)));
                        },
                    .autocast = AutocastPolicy::Float32});
  return op;
}

const Op<NoAttrs>& op_sqrt() {
  static const auto& op =
      define_unary({.name = "sqrt",
                    .rule = UnaryRule::FloatResult,
                    .save_outputs = kSaveResult,
                    .backward = [](BackwardContext& c, const NoAttrs&) {
                      c.set_grad_input(0, div(c.grad_output(0), mul(c.output(0), 2)));
                    }});
  return op;
}

const Op<NoAttrs>& op_rsqrt() {  // d/dx x^-1/2 = -1/2 * result^3
  static const auto& op =
      define_unary({.name = "rsqrt",
                    .rule = UnaryRule::FloatResult,
                    .save_outputs = kSaveResult,
                    .backward = [](BackwardContext& c, const NoAttrs&) {
                      c.set_grad_input(0, mul(c.grad_output(0), mul(pow(c.output(0), 3), -0.5)));
                    }});
  return op;
}

const Op<NoAttrs>& op_reciprocal() {  // d/dx 1/x = -result^2
  static const auto& op =
      define_unary({.name = "reciprocal",
                    .rule = UnaryRule::FloatResult,
                    .save_outputs = kSaveResult,
                    .backward = [](BackwardContext& c, const NoAttrs&) {
                      const Tensor& r = c.output(0);
                      c.set_grad_input(0, neg(mul(c.grad_output(0), mul(r, r))));
                    }});
  return op;
}

const Op<NoAttrs>& op_sin() {
  static const auto& op =
      define_unary({.name = "sin",
                    .rule = UnaryRule::FloatResult,
                    .save_inputs = kSaveX,
                    .backward = [](BackwardContext& c, const NoAttrs&) {
                      c.set_grad_input(0, mul(c.grad_output(0), cos(c.input(0))));
                    }});
  return op;
}

const Op<NoAttrs>& op_cos() {
  static const auto& op =
      define_unary({.name = "cos",
                    .rule = UnaryRule::FloatResult,
                    .save_inputs = kSaveX,
                    .backward = [](BackwardContext& c, const NoAttrs&) {
                      c.set_grad_input(0, neg(mul(c.grad_output(0), sin(c.input(0)))));
                    }});
  return op;
}

const Op<NoAttrs>& op_tan() {  // 1 + tan^2
  static const auto& op =
      define_unary({.name = "tan",
                    .rule = UnaryRule::FloatResult,
                    .save_outputs = kSaveResult,
                    .backward = [](BackwardContext& c, const NoAttrs&) {
                      const Tensor& r = c.output(0);
                      c.set_grad_input(0, mul(c.grad_output(0), add(mul(r, r), 1)));
                    }});
  return op;
}

const Op<NoAttrs>& op_asin() {  // 1 / sqrt(1 - x^2)
  static const auto& op =
      define_unary({.name = "asin",
                    .rule = UnaryRule::FloatResult,
                    .save_inputs = kSaveX,
                    .backward = [](BackwardContext& c, const NoAttrs&) {
                      const Tensor& x = c.input(0);
                      c.set_grad_input(0, mul(c.grad_output(0), rsqrt(1 - mul(x, x))));
                    }});
  return op;
}

const Op<NoAttrs>& op_acos() {  // -1 / sqrt(1 - x^2)
  static const auto& op =
      define_unary({.name = "acos",
                    .rule = UnaryRule::FloatResult,
                    .save_inputs = kSaveX,
                    .backward = [](BackwardContext& c, const NoAttrs&) {
                      const Tensor& x = c.input(0);
                      c.set_grad_input(0, neg(mul(c.grad_output(0), rsqrt(1 - mul(x, x)))));
                    }});
  return op;
}

const Op<NoAttrs>& op_atan() {  // 1 / (1 + x^2)
  static const auto& op =
      define_unary({.name = "atan",
                    .rule = UnaryRule::FloatResult,
                    .save_inputs = kSaveX,
                    .backward = [](BackwardContext& c, const NoAttrs&) {
                      const Tensor& x = c.input(0);
                      c.set_grad_input(0, div(c.grad_output(0), add(mul(x, x), 1)));
                    }});
  return op;
}

const Op<NoAttrs>& op_tanh() {  // 1 - tanh^2
  static const auto& op = define_unary({.name = "tanh",
                                        .rule = UnaryRule::FloatResult,
                                        .save_outputs = kSaveResult,
                                        .backward = [](BackwardContext& c, const NoAttrs&) {
                                          const Tensor& r = c.output(0);
                                          c.set_grad_input(0, mul(c.grad_output(0), 1 - mul(r, r)));
                                        }});
  return op;
}

const Op<NoAttrs>& op_sigmoid() {  // s * (1 - s)
  static const auto& op = define_unary({.name = "sigmoid",
                                        .rule = UnaryRule::FloatResult,
                                        .save_outputs = kSaveResult,
                                        .backward = [](BackwardContext& c, const NoAttrs&) {
                                          const Tensor& s = c.output(0);
                                          c.set_grad_input(0, mul(c.grad_output(0), mul(s, 1 - s)));
                                        }});
  return op;
}

const Op<NoAttrs>& op_erf() {  // 2 / sqrt(pi) * exp(-x^2)
  static const auto& op =
      define_unary({.name = "erf",
                    .rule = UnaryRule::FloatResult,
                    .save_inputs = kSaveX,
                    .backward = [](BackwardContext& c, const NoAttrs&) {
                      const Tensor& x = c.input(0);
                      Tensor d = mul(exp(neg(mul(x, x))), 2 * std::numbers::inv_sqrtpi);
                      c.set_grad_input(0, mul(c.grad_output(0), d));
                    }});
  return op;
}

Tensor exp(const Tensor& x) { return call1(op_exp(), {x}); }
Tensor exp2(const Tensor& x) { return call1(op_exp2(), {x}); }
Tensor log(const Tensor& x) { return call1(op_log(), {x}); }
Tensor log2(const Tensor& x) { return call1(op_log2(), {x}); }
Tensor log1p(const Tensor& x) { return call1(op_log1p(), {x}); }
Tensor expm1(const Tensor& x) { return call1(op_expm1(), {x}); }
Tensor sqrt(const Tensor& x) { return call1(op_sqrt(), {x}); }
Tensor rsqrt(const Tensor& x) { return call1(op_rsqrt(), {x}); }
Tensor reciprocal(const Tensor& x) { return call1(op_reciprocal(), {x}); }
Tensor sin(const Tensor& x) { return call1(op_sin(), {x}); }
Tensor cos(const Tensor& x) { return call1(op_cos(), {x}); }
Tensor tan(const Tensor& x) { return call1(op_tan(), {x}); }
Tensor asin(const Tensor& x) { return call1(op_asin(), {x}); }
Tensor acos(const Tensor& x) { return call1(op_acos(), {x}); }
Tensor atan(const Tensor& x) { return call1(op_atan(), {x}); }
Tensor tanh(const Tensor& x) { return call1(op_tanh(), {x}); }
Tensor sigmoid(const Tensor& x) { return call1(op_sigmoid(), {x}); }
Tensor erf(const Tensor& x) { return call1(op_erf(), {x}); }

// ---- dtype-preserving -----------------------------------------------------------------------

const Op<NoAttrs>& op_abs() {
  static const auto& op =
      define_unary({.name = "abs",
                    .rule = UnaryRule::SameNumeric,
                    .save_inputs = kSaveX,
                    .backward = [](BackwardContext& c, const NoAttrs&) {
                      c.set_grad_input(0, mul(c.grad_output(0), sign(c.input(0))));
                    }});
  return op;
}

// Piecewise constant: zero gradients, as torch gives.
const Op<NoAttrs>& op_sign() {
  static const auto& op = define_unary(
      {.name = "sign",
       .rule = UnaryRule::SameAll,
       .backward = [](BackwardContext& c, const NoAttrs&) { detail::zero_backward(c); }});
  return op;
}
const Op<NoAttrs>& op_floor() {
  static const auto& op = define_unary(
      {.name = "floor",
       .rule = UnaryRule::SameNumeric,
       .backward = [](BackwardContext& c, const NoAttrs&) { detail::zero_backward(c); }});
  return op;
}
const Op<NoAttrs>& op_ceil() {
  static const auto& op = define_unary(
      {.name = "ceil",
       .rule = UnaryRule::SameNumeric,
       .backward = [](BackwardContext& c, const NoAttrs&) { detail::zero_backward(c); }});
  return op;
}
const Op<NoAttrs>& op_trunc() {
  static const auto& op = define_unary(
      {.name = "trunc",
       .rule = UnaryRule::SameNumeric,
       .backward = [](BackwardContext& c, const NoAttrs&) { detail::zero_backward(c); }});
  return op;
}

const Op<RoundAttrs>& op_round() {
  static const auto& op = define_op<RoundAttrs>({
      .name = "round",
      .kind = OpKind::Pointwise,
      .inplace = InplacePolicy::OverInput0,
      .infer =
          [](TensorSpan in, const RoundAttrs& a) {
            ATH_CHECK(a.decimals == 0 || is_floating(in[0].dtype()), DTypeError,
                      "decimals={} needs a floating tensor, got {}", a.decimals,
                      dtype_name(in[0].dtype()));
            return detail::unary_spec<UnaryRule::SameNumeric>(in, a);
          },
      .backward = [](BackwardContext& c, const RoundAttrs&) { detail::zero_backward(c); },
  });
  return op;
}

Tensor abs(const Tensor& x) { return call1(op_abs(), {x}); }
Tensor sign(const Tensor& x) { return call1(op_sign(), {x}); }
Tensor floor(const Tensor& x) { return call1(op_floor(), {x}); }
Tensor ceil(const Tensor& x) { return call1(op_ceil(), {x}); }
Tensor trunc(const Tensor& x) { return call1(op_trunc(), {x}); }
Tensor round(const Tensor& x, int64_t decimals) {
  return call1(op_round(), {x}, RoundAttrs{.decimals = decimals});
}

// ---- Tensor methods -------------------------------------------------------------------------

Tensor Tensor::exp() const { return ath::exp(*this); }
Tensor Tensor::log() const { return ath::log(*this); }
Tensor Tensor::sqrt() const { return ath::sqrt(*this); }
Tensor Tensor::abs() const { return ath::abs(*this); }
Tensor Tensor::sigmoid() const { return ath::sigmoid(*this); }
Tensor Tensor::tanh() const { return ath::tanh(*this); }

}  // namespace ath
