// Copies and dtype conversion: the ops that move data without computing on it.
//
//   Tensor x = randn({2, 3});
//   Tensor c = x.contiguous();   // x itself when already contiguous
//   Tensor h = x.to(kBFloat16);  // rounds to nearest even
//   Tensor dst = zeros({2, 3}, kFloat64), src = arange(3);
//   dst.copy_(src);              // broadcasts src to dst's shape, converts dtype
//   assert(c.is_same(x) && dst.to_vector<double>()[5] == 2);
#pragma once

#include "athanor/ops/op.h"

namespace ath {

Tensor to_dtype(const Tensor& x, DType dtype);  // always a new tensor
Tensor clone(const Tensor& x);                  // contiguous copy, differentiable
Tensor contiguous(const Tensor& x);
// Writes src (broadcast, converted) into dst in place; differentiable w.r.t. src.
Tensor& copy_(Tensor& dst, const Tensor& src);

struct ToDTypeAttrs {
  DType dtype = kFloat32;
  bool operator==(const ToDTypeAttrs&) const = default;
};
const Op<ToDTypeAttrs>& op_to_dtype();
const Op<NoAttrs>& op_clone();
// copy(dst, src) -> dst's shape filled from src: the in-place target of copy_.
const Op<NoAttrs>& op_copy();

}  // namespace ath
