// Comparisons, logical ops and floating-point classification: all return bool tensors.
//
//   Tensor x = from_vector<float>({0.2f, 0.9f, NAN, 0.7f}), y = rand({4});
//   Tensor m = gt(x, 0.5);                  // x > 0.5, bool
//   Tensor both = logical_and(m, lt(x, y)); // any dtypes: nonzero (and NaN) is true
//   Tensor bad = logical_not(isfinite(x));  // [false, false, true, false]
//   assert(m.dtype() == kBool && sum(bad).item<int64_t>() == 1);
//   assert(allclose(x.slice(0, 0, 2), from_vector<double>({0.2, 0.9}), {.rtol = 1e-6}));
//   assert(!equal(x, x));                   // NaN is not equal to itself
//
// Comparisons promote their operands to a common dtype first (an int64 tensor compared with 2.5
// compares in float32, as torch does). None of these ops is differentiable.
#pragma once

#include "athanor/ops/op.h"

namespace ath {

Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Scalar& b);
Tensor ne(const Tensor& a, const Scalar& b);
Tensor lt(const Tensor& a, const Scalar& b);
Tensor le(const Tensor& a, const Scalar& b);
Tensor gt(const Tensor& a, const Scalar& b);
Tensor ge(const Tensor& a, const Scalar& b);

Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor logical_xor(const Tensor& a, const Tensor& b);
Tensor logical_not(const Tensor& a);

Tensor isnan(const Tensor& x);
Tensor isinf(const Tensor& x);
Tensor isfinite(const Tensor& x);  // neither NaN nor infinite; always true for integers

// Closeness, as torch.isclose / allclose / equal. isclose is true where a == b (infinities
// included) or |a - b| is finite and <= atol + rtol * |b|, and, with equal_nan, where both are
// NaN; it broadcasts, compares in float64 (exact for any float and for integers below 2^53) and
// throws ValueError for a negative tolerance. allclose reads the result on the host; equal is
// true when the shapes match and every element compares equal (NaN never does).
struct CloseOptions {
  double rtol = 1e-5;
  double atol = 1e-8;
  bool equal_nan = false;
};
Tensor isclose(const Tensor& a, const Tensor& b, CloseOptions options = {});
bool allclose(const Tensor& a, const Tensor& b, CloseOptions options = {});
bool equal(const Tensor& a, const Tensor& b);

const Op<NoAttrs>& op_eq();
const Op<NoAttrs>& op_ne();
const Op<NoAttrs>& op_lt();
const Op<NoAttrs>& op_le();
const Op<NoAttrs>& op_gt();
const Op<NoAttrs>& op_ge();
const Op<NoAttrs>& op_logical_and();
const Op<NoAttrs>& op_logical_or();
const Op<NoAttrs>& op_logical_xor();
const Op<NoAttrs>& op_logical_not();
const Op<NoAttrs>& op_isnan();
const Op<NoAttrs>& op_isinf();
const Op<NoAttrs>& op_isfinite();

}  // namespace ath
