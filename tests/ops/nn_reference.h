// Naive float64 references for the NN functional ops (softmax, norms), shared by their op-table
// rows and tests. Plain loops over row-major values; they never call the ops under test.
#pragma once

#include <functional>
#include <utility>
#include <vector>

#include "athanor/athanor.h"

namespace ath::testing {

// Flat indices of each 1-D slice of `shape` along `dim` (a 0-dim shape is one slice of one).
std::vector<std::vector<int64_t>> slices_along(const Shape& shape, int64_t dim);

Tensor softmax_ref(const Tensor& x, int64_t dim, bool log);

// A normalization described by where each element goes: its statistics group and the index of
// its weight/bias element.
struct NormMap {
  int64_t groups = 0, params = 0;
  std::function<std::pair<int64_t, int64_t>(int64_t flat)> map;
};
NormMap layer_norm_map(const Shape& x, const Shape& normalized_shape);
NormMap batch_norm_map(const Shape& x);  // [N, C, *]: group = param = channel
NormMap group_norm_map(const Shape& x, int64_t groups);

struct NormStats {
  std::vector<double> mean, var;  // per group, biased variance
  std::vector<int64_t> count;
};
NormStats norm_stats(const Tensor& x, const NormMap& m);

// y = (x - mean) / sqrt(var + eps) * w + b, with the given statistics (batch statistics when
// `stats` is null). w and b may be undefined.
Tensor norm_forward_ref(const Tensor& x, const Tensor& w, const Tensor& b, const NormMap& m,
                        double eps, const NormStats* stats = nullptr);

// Gradients (dx, dw, db) of sum(g * y). With fixed stats (batch_norm eval) dx = g * w * rstd.
struct NormGrads {
  Tensor dx, dw, db;
};
NormGrads norm_backward_ref(const Tensor& g, const Tensor& x, const Tensor& w, const NormMap& m,
                            double eps, const NormStats* fixed_stats = nullptr);

}  // namespace ath::testing
