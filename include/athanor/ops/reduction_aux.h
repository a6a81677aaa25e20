// Internal pointwise helper for the reduction family's backward formulas: zero-safe sign/abs
// powers (norm) and a zero-safe reciprocal (std, norm), which the pointwise family has no single
// op for. A registered op, so the formulas that use it stay differentiable; not public API.
//
//   Tensor y = from_vector<float>({2, 0, -4});
//   Tensor r = reduction_aux(y, {.fn = AuxFn::Recip0});  // 1/y, 0 where y == 0
//   assert(r.to_vector<float>()[0] == 0.5f && r.to_vector<float>()[1] == 0);
#pragma once

#include "athanor/ops/op.h"

namespace ath {

enum class AuxFn : uint8_t {
  SignPow,  // sign(x) * |x|^q, 0 at x == 0 (q = 0: sign(x))
  AbsPow,   // |x|^q (q = 1: |x|)
  Recip0,   // 1 / x, 0 at x == 0 (the masked reciprocal of std and norm backward)
};

struct AuxAttrs {
  AuxFn fn = AuxFn::AbsPow;
  double q = 1;
  bool operator==(const AuxAttrs&) const = default;
};

// Floating inputs only; the result has x's dtype.
Tensor reduction_aux(const Tensor& x, const AuxAttrs& attrs);

const Op<AuxAttrs>& op_reduction_aux();

}  // namespace ath
