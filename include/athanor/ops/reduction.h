// Reductions over any set of dims, with keepdim. An empty dim list reduces every dim.
//
//   Tensor s = sum(x);                       // 0-dim
//   Tensor m = mean(x, {0, 2}, /*keepdim=*/true);
//   Tensor g = sum_to(grad, {1, 3});         // undo broadcasting (used by backward formulas)
//
// Results do not depend on the thread count: every reduction adds in a fixed order (fixed-size
// chunks combined in sequence), so a seed gives bitwise-identical training with 1 or 2 threads.
#pragma once

#include <optional>

#include "athanor/ops/op.h"

namespace ath {

struct ReduceAttrs {
  DimList dims;  // empty: all dims
  bool keepdim = false;
  std::optional<DType> dtype;  // accumulate/return in this dtype (sum, mean, prod)
};

Tensor sum(const Tensor& x, const DimList& dims = {}, bool keepdim = false,
           std::optional<DType> dtype = {});
Tensor mean(const Tensor& x, const DimList& dims = {}, bool keepdim = false,
            std::optional<DType> dtype = {});
// Sums x down to `shape`, which x's shape must broadcast from: the adjoint of expand.
Tensor sum_to(const Tensor& x, const Shape& shape);

const Op<ReduceAttrs>& op_sum();
const Op<ReduceAttrs>& op_mean();

// The output shape of reducing `in` over `dims` (normalized), with or without kept dims.
Shape reduced_shape(const Shape& in, const DimList& dims, bool keepdim);
// Number of elements reduced into each output.
int64_t reduced_count(const Shape& in, const DimList& dims);
// Expands a reduced gradient (shape without keepdim) back to the input's shape.
Tensor expand_reduced_grad(const Tensor& grad, const Shape& input_shape, const DimList& dims,
                           bool keepdim);

}  // namespace ath
