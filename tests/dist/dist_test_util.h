// Helpers of the dist tests: rank-dependent data and its reduction computed locally, so every
// collective is checked against a single-process reference on any world size.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "athanor/athanor.h"
#include "athanor/dist/dist.h"

namespace ath::dist::testing {

// Element i of rank r: distinct per rank, both signs, exact in every dtype tested.
inline double value_of(int rank, int64_t i) {
  const double v = static_cast<double>((rank + 1) * 3 + (i % 17) * 5);
  return i % 3 == 0 ? -v : v;
}

inline std::vector<double> rank_values(int rank, int64_t n) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = value_of(rank, i);
  return v;
}

inline Tensor rank_tensor(int rank, int64_t n, DType dtype) {
  return from_vector<double>(rank_values(rank, n), {n}).to(dtype).contiguous();
}

// The reduction over ranks 0..world-1 of element i, as the dtype computes it.
inline double reduced(ReduceOp op, int world, int64_t i, DType dtype) {
  double r = value_of(0, i);
  for (int k = 1; k < world; ++k) {
    const double v = value_of(k, i);
    if (op == ReduceOp::Max)
      r = std::max(r, v);
    else if (op == ReduceOp::Min)
      r = std::min(r, v);
    else
      r += v;
  }
  if (op != ReduceOp::Mean) return r;
  if (dtype == kInt64 || dtype == kInt32) {
    return static_cast<double>(static_cast<int64_t>(r) / world);  // truncates toward zero
  }
  return r / world;
}

inline std::vector<double> as_doubles(const Tensor& t) { return t.to_vector<double>(); }

}  // namespace ath::dist::testing
