// Element-wise ONNX ops: arithmetic, math functions, comparisons, logic, Where, Clip, Cast.
// Broadcasting is numpy's, as athanor's binary ops already do it.
#include <cmath>

#include "../op_table.h"
#include "../tensor_proto.h"
#include "athanor/ops/comparison.h"
#include "athanor/ops/copy.h"
#include "athanor/ops/creation.h"
#include "athanor/ops/indexing.h"
#include "athanor/ops/pointwise.h"
#include "athanor/ops/views.h"

namespace ath::onnx::detail {

namespace {

// ONNX keeps the input type where athanor would promote (integer division, Pow, Mod): the
// result is cast back to input 0's type.
Tensor like(const Tensor& r, const Tensor& x) { return like_type(r, x); }

// Before opset 7, binary ops broadcast only with broadcast=1, aligning B at `axis` of A when
// given (else at A's end, as numpy does): B gets trailing 1s to line up.
Tensor operand_b(NodeContext& c) {
  const Tensor& a = c.in(0);
  const Tensor& b = c.in(1);
  if (c.opset() >= 7 || c.attr_int("broadcast", 0) == 0 || !c.has_attr("axis")) return b;
  const int64_t axis = c.axis(c.attr_int("axis", 0), a.dim());
  const int64_t trailing = a.dim() - axis - b.dim();
  ATH_CHECK(trailing >= 0, ShapeError, "B of rank {} at axis {} of a rank-{} A", b.dim(), axis,
            a.dim());
  Shape s = b.shape();
  for (int64_t i = 0; i < trailing; ++i) s.push_back(1);
  return reshape(b, s);
}

template <Tensor (*F)(const Tensor&, const Tensor&)>
void binary(NodeContext& c) {
  c.out(0, like(F(c.in(0), operand_b(c)), c.in(0)));
}

Tensor add2(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor sub2(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor mul2(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor pow2(const Tensor& a, const Tensor& b) { return pow(a, b); }

void lower_div(NodeContext& c) {
  const Tensor& a = c.in(0);
  Tensor q = div(a, operand_b(c));
  if (!a.is_floating_point()) q = trunc(q);  // C's integer division: towards zero
  c.out(0, like(q, a));
}

void lower_mod(NodeContext& c) {
  const Tensor& a = c.in(0);
  if (c.attr_int("fmod", 0) != 0) {
    c.out(0, like(fmod(a, c.in(1)), a));
  } else {
    ATH_CHECK(!a.is_floating_point(), ValueError, "Mod with fmod=0 needs integer inputs");
    c.out(0, like(remainder(a, c.in(1)), a));  // the divisor's sign, as Python's %
  }
}

template <Tensor (*F)(const Tensor&)>
void unary(NodeContext& c) {
  c.out(0, F(c.in(0)));
}

Tensor round_even(const Tensor& x) { return round(x); }

template <Tensor (*F)(const Tensor&, const Tensor&)>
void compare(NodeContext& c) {
  c.out(0, F(c.in(0), c.in(1)));
}

Tensor eq2(const Tensor& a, const Tensor& b) { return eq(a, b); }
Tensor lt2(const Tensor& a, const Tensor& b) { return lt(a, b); }
Tensor le2(const Tensor& a, const Tensor& b) { return le(a, b); }
Tensor gt2(const Tensor& a, const Tensor& b) { return gt(a, b); }
Tensor ge2(const Tensor& a, const Tensor& b) { return ge(a, b); }

// Max, Min, Sum, Mean: variadic, broadcasting.
template <int Kind>
void variadic(NodeContext& c) {
  Tensor acc = c.in(0);
  for (int i = 1; i < c.num_inputs(); ++i) {
    const Tensor& x = c.in(i);
    if constexpr (Kind == 0) acc = maximum(acc, x);
    if constexpr (Kind == 1) acc = minimum(acc, x);
    if constexpr (Kind >= 2) acc = add(acc, x);
  }
  if constexpr (Kind == 3) acc = like(div(acc, static_cast<double>(c.num_inputs())), c.in(0));
  if (c.num_inputs() == 1) acc = clone(acc);
  c.out(0, acc);
}

void lower_where(NodeContext& c) { c.out(0, where(c.in(0), c.in(1), c.in(2))); }

void lower_clip(NodeContext& c) {
  const Tensor& x = c.in(0);
  if (c.opset() < 11) {
    c.out(0, clamp(x, std::optional<Scalar>(c.attr_float("min", -INFINITY)),
                   std::optional<Scalar>(c.attr_float("max", INFINITY))));
    return;
  }
  // Bounds are optional inputs from opset 11: 0-dim tensors, kept as tensors so that a run-time
  // bound stays a graph input.
  Tensor y = x;
  if (c.has(1)) y = maximum(y, to_dtype(c.in(1), x.dtype()));
  if (c.has(2)) y = minimum(y, to_dtype(c.in(2), x.dtype()));
  if (!c.has(1) && !c.has(2)) y = clone(x);
  c.out(0, y);
}

void lower_cast(NodeContext& c) {
  const int to = static_cast<int>(c.attr_int("to", 0));
  const std::optional<DType> dt = dtype_from_onnx(to);
  if (!dt) c.unsupported("Cast to {} is not supported", onnx_type_name(to));
  c.out(0, to_dtype(c.in(0), *dt));
}

void lower_cast_like(NodeContext& c) { c.out(0, to_dtype(c.in(0), c.in(1).dtype())); }

void lower_identity(NodeContext& c) { c.out(0, c.in(0)); }

void lower_logical_not(NodeContext& c) { c.out(0, logical_not(c.in(0))); }
Tensor and2(const Tensor& a, const Tensor& b) { return logical_and(a, b); }
Tensor or2(const Tensor& a, const Tensor& b) { return logical_or(a, b); }
Tensor xor2(const Tensor& a, const Tensor& b) { return logical_xor(a, b); }

void lower_isinf(NodeContext& c) {
  const Tensor& x = c.in(0);
  const bool pos = c.attr_int("detect_positive", 1) != 0;
  const bool neg = c.attr_int("detect_negative", 1) != 0;
  Tensor inf = isinf(x);
  if (pos && !neg) inf = logical_and(inf, gt(x, Scalar(0)));
  if (neg && !pos) inf = logical_and(inf, lt(x, Scalar(0)));
  if (!pos && !neg) inf = zeros_like(x, DType::Bool);
  c.out(0, inf);
}

// Hyperbolic functions and their inverses, composed from exp/log/sqrt (no kernels of their own).
Tensor sinh_(const Tensor& x) { return mul(sub(exp(x), exp(neg(x))), 0.5); }
Tensor cosh_(const Tensor& x) { return mul(add(exp(x), exp(neg(x))), 0.5); }
Tensor asinh_(const Tensor& x) { return log(add(x, sqrt(add(mul(x, x), 1.0)))); }
Tensor acosh_(const Tensor& x) { return log(add(x, sqrt(sub(mul(x, x), 1.0)))); }
Tensor atanh_(const Tensor& x) { return mul(log(div(add(x, 1.0), add(neg(x), 1.0))), 0.5); }

}  // namespace

void add_elementwise_ops(OpTable& t) {
  t["Add"] = {binary<add2>, 0, 6, kNumericTypes};
  t["Sub"] = {binary<sub2>, 0, 6, kNumericTypes};
  t["Mul"] = {binary<mul2>, 0, 6, kNumericTypes};
  t["Div"] = {lower_div, 0, 6, kNumericTypes};
  t["Pow"] = {binary<pow2>, 0, 1, kNumericTypes};
  t["Mod"] = {lower_mod, 0, 10, kNumericTypes};
  t["Max"] = {variadic<0>, 0, 6, kNumericTypes};
  t["Min"] = {variadic<1>, 0, 6, kNumericTypes};
  t["Sum"] = {variadic<2>, 0, 6, kNumericTypes};
  t["Mean"] = {variadic<3>, 0, 6, kFloatTypes};
  t["Neg"] = {unary<neg>, 0, 6, kNumericTypes};
  t["Abs"] = {unary<abs>, 0, 6, kNumericTypes};
  t["Sign"] = {unary<sign>, 0, 9, kNumericTypes};
  t["Sqrt"] = {unary<sqrt>, 0, 6, kFloatTypes};
  t["Reciprocal"] = {unary<reciprocal>, 0, 6, kFloatTypes};
  t["Exp"] = {unary<exp>, 0, 6, kFloatTypes};
  t["Log"] = {unary<log>, 0, 6, kFloatTypes};
  t["Sin"] = {unary<sin>, 0, 7, kFloatTypes};
  t["Cos"] = {unary<cos>, 0, 7, kFloatTypes};
  t["Tan"] = {unary<tan>, 0, 7, kFloatTypes};
  t["Tanh"] = {unary<tanh>, 0, 6, kFloatTypes};
  t["Asin"] = {unary<asin>, 0, 7, kFloatTypes};
  t["Acos"] = {unary<acos>, 0, 7, kFloatTypes};
  t["Atan"] = {unary<atan>, 0, 7, kFloatTypes};
  t["Sinh"] = {unary<sinh_>, 0, 9, kFloatTypes};
  t["Cosh"] = {unary<cosh_>, 0, 9, kFloatTypes};
  t["Asinh"] = {unary<asinh_>, 0, 9, kFloatTypes};
  t["Acosh"] = {unary<acosh_>, 0, 9, kFloatTypes};
  t["Atanh"] = {unary<atanh_>, 0, 9, kFloatTypes};
  t["Sigmoid"] = {unary<sigmoid>, 0, 6, kFloatTypes};
  t["Erf"] = {unary<erf>, 0, 9, kNumericTypes & ~type_bit(2)};
  t["Floor"] = {unary<floor>, 0, 6, kFloatTypes};
  t["Ceil"] = {unary<ceil>, 0, 6, kFloatTypes};
  t["Round"] = {unary<round_even>, 0, 11, kFloatTypes};
  t["IsNaN"] = {unary<isnan>, 0, 9, kFloatTypes};
  t["IsInf"] = {lower_isinf, 0, 10, kFloatTypes};
  t["Equal"] = {compare<eq2>, 0, 7, kAllTypes};
  t["Less"] = {compare<lt2>, 0, 7, kNumericTypes};
  t["LessOrEqual"] = {compare<le2>, 0, 12, kNumericTypes};
  t["Greater"] = {compare<gt2>, 0, 7, kNumericTypes};
  t["GreaterOrEqual"] = {compare<ge2>, 0, 12, kNumericTypes};
  t["Not"] = {lower_logical_not, 0, 1, type_bit(9)};
  t["And"] = {compare<and2>, 0, 7, type_bit(9)};
  t["Or"] = {compare<or2>, 0, 7, type_bit(9)};
  t["Xor"] = {compare<xor2>, 0, 7, type_bit(9)};
  t["Where"] = {lower_where, 0, 9, type_bit(9)};
  t["Clip"] = {lower_clip, 0, 6, kNumericTypes};
  t["Cast"] = {lower_cast, 0, 6, kAllTypes};
  t["CastLike"] = {lower_cast_like, 0, 15, kAllTypes};
  t["Identity"] = {lower_identity, 0, 1, kAllTypes};
}

}  // namespace ath::onnx::detail
