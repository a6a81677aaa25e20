// Element-wise ops: arithmetic, unary math, comparisons and logic, casts and copies. ONNX's
// binary ops want both operands of one type where athanor promotes, so operands are converted
// to the result's type first (a constant operand is converted at export time).
#include <cmath>
#include <numbers>

#include "../tensor_proto.h"
#include "athanor/ops/comparison.h"
#include "athanor/ops/copy.h"
#include "athanor/ops/fill.h"
#include "athanor/ops/indexing.h"
#include "athanor/ops/pointwise.h"
#include "emitters.h"

namespace ath::onnx::detail {

namespace {

void emit_add(EmitContext& c) {
  const double alpha = c.attrs<AlphaAttrs>().alpha.to_double();
  const DType t = c.out_meta(0).dtype;
  const std::string a = c.in_as(0, t), b = c.in_as(1, t);
  if (alpha == 1) {
    c.add("Add", {a, b}, {c.out(0)});
  } else if (alpha == -1) {
    c.add("Sub", {a, b}, {c.out(0)});
  } else {
    c.add("Add", {a, c.op("Mul", {b, c.scalar(alpha, t)})}, {c.out(0)});
  }
}

template <const char* Name>
void emit_plain(EmitContext& c) {
  emit_same_type(c, Name);
}

constexpr char kMul[] = "Mul", kDiv[] = "Div", kNeg[] = "Neg", kExp[] = "Exp", kLog[] = "Log",
               kSqrt[] = "Sqrt", kReciprocal[] = "Reciprocal", kSin[] = "Sin", kCos[] = "Cos",
               kTan[] = "Tan", kAsin[] = "Asin", kAcos[] = "Acos", kAtan[] = "Atan",
               kTanh[] = "Tanh", kSigmoid[] = "Sigmoid", kErf[] = "Erf", kAbs[] = "Abs",
               kSign[] = "Sign", kFloor[] = "Floor", kCeil[] = "Ceil", kPow[] = "Pow",
               kMax[] = "Max", kMin[] = "Min", kIdentity[] = "Identity";

// f(x) built from ONNX ops on the converted input; the last op names output 0.
void emit_rsqrt(EmitContext& c) {
  c.add("Reciprocal", {c.op("Sqrt", {c.in_as(0, c.out_meta(0).dtype)})}, {c.out(0)});
}
void emit_exp2(EmitContext& c) {
  const DType t = c.out_meta(0).dtype;
  c.add("Pow", {c.scalar(2, t), c.in_as(0, t)}, {c.out(0)});
}
void emit_log2(EmitContext& c) {
  const DType t = c.out_meta(0).dtype;
  c.add("Div", {c.op("Log", {c.in_as(0, t)}), c.scalar(std::numbers::ln2, t)}, {c.out(0)});
}
void emit_log1p(EmitContext& c) {
  const DType t = c.out_meta(0).dtype;
  c.add("Log", {c.op("Add", {c.in_as(0, t), c.scalar(1, t)})}, {c.out(0)});
}
void emit_expm1(EmitContext& c) {
  const DType t = c.out_meta(0).dtype;
  c.add("Sub", {c.op("Exp", {c.in_as(0, t)}), c.scalar(1, t)}, {c.out(0)});
}
void emit_round(EmitContext& c) {
  if (c.attrs<RoundAttrs>().decimals != 0) c.unsupported("round with decimals");
  emit_same_type(c, "Round");
}
void emit_pow_scalar(EmitContext& c) {
  const DType t = c.out_meta(0).dtype;
  c.add("Pow", {c.in_as(0, t), c.scalar(c.attrs<PowScalarAttrs>().exponent.to_double(), t)},
        {c.out(0)});
}
void emit_clamp(EmitContext& c) {
  const ClampAttrs& a = c.attrs<ClampAttrs>();
  const DType t = c.out_meta(0).dtype;
  c.add("Clip",
        {c.in_as(0, t), a.min ? c.scalar(a.min->to_double(), t) : std::string(),
         a.max ? c.scalar(a.max->to_double(), t) : std::string()},
        {c.out(0)});
}
void emit_where(EmitContext& c) {
  const DType t = c.out_meta(0).dtype;
  c.add("Where", {c.in_as(0, kBool), c.in_as(1, t), c.in_as(2, t)}, {c.out(0)});
}
void emit_masked_fill(EmitContext& c) {  // (x, mask, value)
  const DType t = c.out_meta(0).dtype;
  c.add("Where", {c.in_as(1, kBool), c.in_as(2, t), c.in_as(0, t)}, {c.out(0)});
}

// Comparisons compare in the operands' promoted type; a 0-d constant operand takes the other's.
DType compare_type(EmitContext& c) {
  const DType a = c.in_meta(0).dtype, b = c.in_meta(1).dtype;
  if (c.in_meta(1).shape.empty() && c.known_in(1)) return a;
  if (c.in_meta(0).shape.empty() && c.known_in(0)) return b;
  return promote_types(a, b);
}
template <const char* Name, bool Negate>
void emit_compare(EmitContext& c) {
  const DType t = compare_type(c);
  const std::string a = c.in_as(0, t), b = c.in_as(1, t);
  if (Negate) {
    c.add("Not", {c.op(Name, {a, b})}, {c.out(0)});
  } else {
    c.add(Name, {a, b}, {c.out(0)});
  }
}
constexpr char kEqual[] = "Equal", kLess[] = "Less", kLessOrEqual[] = "LessOrEqual",
               kGreater[] = "Greater", kGreaterOrEqual[] = "GreaterOrEqual";

template <const char* Name>
void emit_logic(EmitContext& c) {
  std::vector<std::string> inputs;
  for (int i = 0; i < c.num_inputs(); ++i) inputs.push_back(c.in_as(i, kBool));
  c.add(Name, inputs, {c.out(0)});
}
constexpr char kAnd[] = "And", kOr[] = "Or", kXor[] = "Xor", kNot[] = "Not";

template <const char* Name>
void emit_float_test(EmitContext& c) {
  if (!is_floating(c.in_meta(0).dtype)) c.unsupported("on an integer tensor");
  c.add(Name, {c.in(0)}, {c.out(0)});
}
constexpr char kIsNaN[] = "IsNaN", kIsInf[] = "IsInf";

void emit_to_dtype(EmitContext& c) {
  ::onnx::NodeProto& n = c.add("Cast", {c.in(0)}, {c.out(0)});
  attr_i(n, "to", onnx_from_dtype(c.attrs<ToDTypeAttrs>().dtype));
}

// copy(dst, src): dst's shape and dtype filled from src (broadcast).
void emit_copy(EmitContext& c) {
  const DType t = c.out_meta(0).dtype;
  const std::string src = c.in_as(1, t);
  if (c.in_meta(1).shape == c.out_meta(0).shape) {
    c.add("Identity", {src}, {c.out(0)});
  } else {
    c.add("Expand", {src, c.runtime_shape(c.out_value(0))}, {c.out(0)});
  }
}

void emit_fill(EmitContext& c) {
  const DType t = c.out_meta(0).dtype;
  c.add("Expand",
        {c.scalar(c.attrs<FillAttrs>().value.to_double(), t), c.runtime_shape(c.out_value(0))},
        {c.out(0)});
}

}  // namespace

void add_elementwise_emitters(EmitTable& t) {
  t[&op_add()] = {emit_add};
  t[&op_mul()] = {emit_plain<kMul>};
  t[&op_div()] = {emit_plain<kDiv>};
  t[&op_neg()] = {emit_plain<kNeg>};
  t[&op_exp()] = {emit_plain<kExp>};
  t[&op_exp2()] = {emit_exp2};
  t[&op_log()] = {emit_plain<kLog>};
  t[&op_log2()] = {emit_log2};
  t[&op_log1p()] = {emit_log1p};
  t[&op_expm1()] = {emit_expm1};
  t[&op_sqrt()] = {emit_plain<kSqrt>};
  t[&op_rsqrt()] = {emit_rsqrt};
  t[&op_reciprocal()] = {emit_plain<kReciprocal>};
  t[&op_sin()] = {emit_plain<kSin>};
  t[&op_cos()] = {emit_plain<kCos>};
  t[&op_tan()] = {emit_plain<kTan>};
  t[&op_asin()] = {emit_plain<kAsin>};
  t[&op_acos()] = {emit_plain<kAcos>};
  t[&op_atan()] = {emit_plain<kAtan>};
  t[&op_tanh()] = {emit_plain<kTanh>};
  t[&op_sigmoid()] = {emit_plain<kSigmoid>};
  t[&op_erf()] = {emit_plain<kErf>};
  t[&op_abs()] = {emit_plain<kAbs>};
  t[&op_sign()] = {emit_plain<kSign>};
  t[&op_floor()] = {emit_plain<kFloor>};
  t[&op_ceil()] = {emit_plain<kCeil>};
  t[&op_round()] = {emit_round};
  t[&op_pow()] = {emit_plain<kPow>};
  t[&op_pow_tensor_scalar()] = {emit_pow_scalar};
  t[&op_maximum()] = {emit_plain<kMax>};
  t[&op_minimum()] = {emit_plain<kMin>};
  t[&op_clamp()] = {emit_clamp};
  t[&op_where()] = {emit_where};
  t[&op_masked_fill()] = {emit_masked_fill};
  t[&op_eq()] = {emit_compare<kEqual, false>};
  t[&op_ne()] = {emit_compare<kEqual, true>};
  t[&op_lt()] = {emit_compare<kLess, false>};
  t[&op_le()] = {emit_compare<kLessOrEqual, false>};
  t[&op_gt()] = {emit_compare<kGreater, false>};
  t[&op_ge()] = {emit_compare<kGreaterOrEqual, false>};
  t[&op_logical_and()] = {emit_logic<kAnd>};
  t[&op_logical_or()] = {emit_logic<kOr>};
  t[&op_logical_xor()] = {emit_logic<kXor>};
  t[&op_logical_not()] = {emit_logic<kNot>};
  t[&op_isnan()] = {emit_float_test<kIsNaN>};
  t[&op_isinf()] = {emit_float_test<kIsInf>};
  t[&op_to_dtype()] = {emit_to_dtype};
  t[&op_clone()] = {emit_plain<kIdentity>};
  t[&op_copy()] = {emit_copy};
  t[&op_fill()] = {emit_fill};
}

}  // namespace ath::onnx::detail
