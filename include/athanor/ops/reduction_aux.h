// Internal pointwise helpers for the reduction family's backward formulas (exp for logsumexp,
// sign/abs powers for norm, a zero-safe reciprocal for std and norm, an equality mask for the
// extrema). They are registered ops, so the formulas that use them stay differentiable; they are
// not part of the public API — use the pointwise family (exp, abs, eq, ...) in user code.
//
//   Tensor e = reduction_aux(x, {.fn = AuxFn::Exp});
//   Tensor m = reduction_eq(x, y);  // bool, broadcast
#pragma once

#include "athanor/ops/op.h"

namespace ath {

enum class AuxFn : uint8_t {
  Exp,      // exp(x)
  SignPow,  // sign(x) * |x|^q, 0 at x == 0 (q = 0: sign(x))
  AbsPow,   // |x|^q (q = 1: |x|)
  Recip0,   // 1 / x, 0 at x == 0 (the masked reciprocal of std and norm backward)
};

struct AuxAttrs {
  AuxFn fn = AuxFn::Exp;
  double q = 1;
};

// Floating inputs only; the result has x's dtype.
Tensor reduction_aux(const Tensor& x, const AuxAttrs& attrs);
// a == b elementwise (broadcast, promoted), as bool. Not differentiable.
Tensor reduction_eq(const Tensor& a, const Tensor& b);

const Op<AuxAttrs>& op_reduction_aux();
const Op<NoAttrs>& op_reduction_eq();

}  // namespace ath
