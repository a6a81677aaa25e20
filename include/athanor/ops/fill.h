// The fill op behind Tensor::fill_, zero_, ones and full.
#pragma once

#include "athanor/ops/op.h"

namespace ath {

struct FillAttrs {
  Scalar value;
  bool operator==(const FillAttrs&) const = default;
};
const Op<FillAttrs>& op_fill();

}  // namespace ath
