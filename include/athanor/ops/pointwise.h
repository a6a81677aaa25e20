// Pointwise ops: elementwise math with NumPy broadcasting and PyTorch type promotion.
//
//   Tensor c = add(a, b, /*alpha=*/2);   // a + 2 * b
//   Tensor d = a * 0.5;                  // a scalar keeps a's dtype (float16 stays float16)
//   Tensor m = gt(a, b);                 // bool
#pragma once

#include "athanor/ops/op.h"

namespace ath {

// Wraps a number as a 0-dim tensor of the dtype it would promote to next to `like`.
Tensor wrap_scalar(const Scalar& s, const Tensor& like);

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
};
const Op<AlphaAttrs>& op_add();  // a + alpha * b
const Op<NoAttrs>& op_mul();
const Op<NoAttrs>& op_div();
const Op<NoAttrs>& op_neg();

// Shape rule shared by binary pointwise ops: broadcast shapes, promoted dtype.
OutputSpec binary_pointwise_spec(TensorSpan in);
// Same, but the result dtype is floating (int / int gives float32): div, pow with float...
OutputSpec binary_float_spec(TensorSpan in);

}  // namespace ath
