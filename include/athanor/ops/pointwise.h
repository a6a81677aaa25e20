// Pointwise ops: elementwise math with NumPy broadcasting and PyTorch type promotion.
//
//   Tensor a = arange(-2, 3), b = ones({5}), h = ones({5}, kFloat16);  // a: int64 [-2 .. 2]
//   Tensor c = add(a, b, /*alpha=*/2);   // a + 2 * b, float32
//   Tensor d = h * 0.5;                  // a scalar keeps h's dtype (float16 stays float16)
//   Tensor e = exp(arange(3));           // integer input, float32 result (as torch.exp)
//   Tensor p = pow(a, 2);                // int64 stays int64; pow(a, 2.5) is float32
//   Tensor r = remainder(a, -3);         // Python sign convention; int modulo by 0 throws
//   assert(d.dtype() == kFloat16 && p.dtype() == kInt64 && r.to_vector<int64_t>()[4] == -1);
//
// Promotion follows torch.result_type: tensors with dims outrank 0-dim tensors, which outrank
// wrapped Python scalars, unless the lower-ranked operand is of a higher category (bool < int <
// float). Activations live in activations.h, comparisons and logical ops in comparison.h.
#pragma once

#include <optional>

#include "athanor/ops/op.h"

namespace ath {

// Wraps a number as a 0-dim tensor of the dtype it would promote to next to `like`.
Tensor wrap_scalar(const Scalar& s, const Tensor& like);

// torch.result_type over tensors: 0-dim tensors only lift the category of the dimensioned ones
// (a float16 tensor plus a 0-dim float64 tensor stays float16; an int tensor plus a 0-dim float64
// tensor becomes float64).
DType result_type(TensorSpan tensors);

// ---- arithmetic -----------------------------------------------------------------------------
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Scalar& b);
Tensor div(const Tensor& a, const Tensor& b);  // true division: ints give float32
Tensor div(const Tensor& a, const Scalar& b);
Tensor neg(const Tensor& a);

struct AlphaAttrs {
  Scalar alpha = 1;
  bool operator==(const AlphaAttrs&) const = default;
};
const Op<AlphaAttrs>& op_add();  // a + alpha * b
const Op<NoAttrs>& op_mul();
const Op<NoAttrs>& op_div();
const Op<NoAttrs>& op_neg();

// ---- unary math: floating result (bool and integer inputs compute in float32) ----------------
Tensor exp(const Tensor& x);
Tensor exp2(const Tensor& x);
Tensor log(const Tensor& x);
Tensor log2(const Tensor& x);
Tensor log1p(const Tensor& x);
Tensor expm1(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor reciprocal(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tan(const Tensor& x);
Tensor asin(const Tensor& x);
Tensor acos(const Tensor& x);
Tensor atan(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor erf(const Tensor& x);

const Op<NoAttrs>& op_exp();
const Op<NoAttrs>& op_exp2();
const Op<NoAttrs>& op_log();
const Op<NoAttrs>& op_log2();
const Op<NoAttrs>& op_log1p();
const Op<NoAttrs>& op_expm1();
const Op<NoAttrs>& op_sqrt();
const Op<NoAttrs>& op_rsqrt();
const Op<NoAttrs>& op_reciprocal();
const Op<NoAttrs>& op_sin();
const Op<NoAttrs>& op_cos();
const Op<NoAttrs>& op_tan();
const Op<NoAttrs>& op_asin();
const Op<NoAttrs>& op_acos();
const Op<NoAttrs>& op_atan();
const Op<NoAttrs>& op_tanh();
const Op<NoAttrs>& op_sigmoid();
const Op<NoAttrs>& op_erf();

// ---- unary, dtype-preserving --------------------------------------------------------------
// abs refuses bool; sign(bool) is the identity; sign(NaN) is 0, as in torch.
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);
// Identity on integer tensors; bool is refused. round is half-to-even (0.5 -> 0, 1.5 -> 2);
// with decimals != 0 it rounds x * 10^decimals (floating tensors only). Gradients are zero.
Tensor floor(const Tensor& x);
Tensor ceil(const Tensor& x);
Tensor round(const Tensor& x, int64_t decimals = 0);
Tensor trunc(const Tensor& x);

struct RoundAttrs {
  int64_t decimals = 0;
  bool operator==(const RoundAttrs&) const = default;
};
const Op<NoAttrs>& op_abs();
const Op<NoAttrs>& op_sign();
const Op<NoAttrs>& op_floor();
const Op<NoAttrs>& op_ceil();
const Op<RoundAttrs>& op_round();
const Op<NoAttrs>& op_trunc();

// ---- binary math ----------------------------------------------------------------------------
// pow: integer ** negative integer is 1, +-1 or 0 elementwise for tensor exponents (as torch);
// a negative integer *scalar* exponent on an integer tensor is refused. pow(bool, bool) is
// refused; a bool tensor with an integer exponent computes in int64.
Tensor pow(const Tensor& base, const Tensor& exponent);
Tensor pow(const Tensor& base, const Scalar& exponent);
Tensor pow(const Scalar& base, const Tensor& exponent);
// NaN-propagating elementwise max/min (torch.maximum/minimum); ties split the gradient.
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
// fmod: result has the sign of a (C fmod). remainder: the sign of b (Python %). Integer division
// by zero throws ValueError.
Tensor fmod(const Tensor& a, const Tensor& b);
Tensor fmod(const Tensor& a, const Scalar& b);
Tensor remainder(const Tensor& a, const Tensor& b);
Tensor remainder(const Tensor& a, const Scalar& b);
// start + weight * (end - start); floating tensors of one dtype (no promotion, as torch.lerp).
Tensor lerp(const Tensor& start, const Tensor& end, const Scalar& weight);
Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight);
// min(max(x, min), max): at least one bound. Scalar bounds promote like a Python scalar
// (clamp(int_tensor, 0.5) is float32); tensor bounds broadcast and promote like maximum/minimum.
// NaN in x propagates.
Tensor clamp(const Tensor& x, const std::optional<Scalar>& min,
             const std::optional<Scalar>& max = std::nullopt);
Tensor clamp(const Tensor& x, const std::optional<Tensor>& min,
             const std::optional<Tensor>& max = std::nullopt);
Tensor clamp_min(const Tensor& x, const Scalar& min);
Tensor clamp_max(const Tensor& x, const Scalar& max);

struct PowScalarAttrs {
  Scalar exponent = 1;
  bool operator==(const PowScalarAttrs&) const = default;
};
struct LerpAttrs {
  Scalar weight = 0.5;
  bool operator==(const LerpAttrs&) const = default;
};
struct ClampAttrs {
  std::optional<Scalar> min, max;
  bool operator==(const ClampAttrs&) const = default;
};
const Op<NoAttrs>& op_pow();                       // (base, exponent) tensors
const Op<PowScalarAttrs>& op_pow_tensor_scalar();  // base tensor, exponent attribute
const Op<NoAttrs>& op_maximum();
const Op<NoAttrs>& op_minimum();
const Op<NoAttrs>& op_fmod();
const Op<NoAttrs>& op_remainder();
const Op<LerpAttrs>& op_lerp_scalar();  // (start, end), weight attribute
const Op<NoAttrs>& op_lerp();           // (start, end, weight)
const Op<ClampAttrs>& op_clamp();       // scalar bounds; tensor bounds decompose to max/min

// Shape rule shared by binary pointwise ops: broadcast shapes, promoted dtype.
OutputSpec binary_pointwise_spec(TensorSpan in);
// Same, but the result dtype is floating (int / int gives float32): div, pow with float...
OutputSpec binary_float_spec(TensorSpan in);

}  // namespace ath
