// Naive float64 references for the op table: plain loops over row-major data, written to be
// obviously right rather than fast. They never call the op under test.
#pragma once

#include <functional>
#include <vector>

#include "athanor/athanor.h"

namespace ath::testing {

// Row-major float64 values of t (any dtype, any strides).
std::vector<double> values(const Tensor& t);
// A float64 tensor of `shape` from row-major values.
Tensor make_f64(const Shape& shape, const std::vector<double>& v);
// Row-major multi-index <-> flat index.
std::vector<int64_t> unravel(int64_t flat, const Shape& shape);
int64_t ravel(const std::vector<int64_t>& idx, const Shape& shape);
// The flat index into `src_shape` that broadcast index `idx` (of `out_shape`) reads.
int64_t broadcast_index(const std::vector<int64_t>& idx, const Shape& out_shape,
                        const Shape& src_shape);

// Elementwise references with broadcasting.
std::function<Tensor(const std::vector<Tensor>&)> unary_ref(std::function<double(double)> f);
std::function<Tensor(const std::vector<Tensor>&)> binary_ref(
    std::function<double(double, double)> f);
std::function<Tensor(const std::vector<Tensor>&)> ternary_ref(
    std::function<double(double, double, double)> f);

// Reduces x over dims (empty: all) with `combine` starting from `init`; `finalize` gets the
// accumulated value and the count.
Tensor reduce_ref(
    const Tensor& x, const DimList& dims, bool keepdim, double init,
    const std::function<double(double, double)>& combine,
    const std::function<double(double, int64_t)>& finalize = [](double v, int64_t) { return v; });

}  // namespace ath::testing
