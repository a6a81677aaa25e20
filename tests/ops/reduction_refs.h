// Naive float64 references for the reduction family's op-table rows: each output's group of
// reduced values is gathered in row-major order and handed to a plain function.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "support/op_table.h"
#include "support/reference.h"

namespace ath::testing {

using Group = std::vector<double>;

// f(values of the group) for every output of reducing x over dims (empty: all).
inline Tensor group_ref(const Tensor& x, const DimList& dims_in, bool keepdim,
                        const std::function<double(const Group&)>& f) {
  const Shape& shape = x.shape();
  std::vector<bool> reduced(shape.size(), dims_in.empty());
  for (int64_t d : dims_in)
    reduced[static_cast<std::size_t>(d < 0 ? d + int64_t(shape.size()) : d)] = true;
  Shape out_shape, keep_shape;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    keep_shape.push_back(reduced[d] ? 1 : shape[d]);
    if (!reduced[d])
      out_shape.push_back(shape[d]);
    else if (keepdim)
      out_shape.push_back(1);
  }
  std::vector<Group> groups(static_cast<std::size_t>(numel(keep_shape)));
  std::vector<double> v = values(x);
  for (int64_t k = 0; k < numel(shape); ++k) {
    auto idx = unravel(k, shape);
    for (std::size_t d = 0; d < shape.size(); ++d)
      if (reduced[d]) idx[d] = 0;
    groups[static_cast<std::size_t>(ravel(idx, keep_shape))].push_back(
        v[static_cast<std::size_t>(k)]);
  }
  std::vector<double> out;
  for (const Group& g : groups) out.push_back(f(g));
  return make_f64(out_shape, out);
}

inline RefFn group(DimList dims, bool keepdim, std::function<double(const Group&)> f) {
  return [=](const Tensors& x) { return group_ref(x[0], dims, keepdim, f); };
}

// Scans along dim: out[i] = f(x[0..i]) in scan order.
inline Tensor scan_ref(const Tensor& x, int64_t dim, bool reverse, bool exclusive, bool prod) {
  const Shape& s = x.shape();
  std::vector<double> v = values(x), out(v.size());
  if (s.empty()) return make_f64(s, exclusive ? std::vector<double>{prod ? 1.0 : 0.0} : v);
  const int64_t n = s[static_cast<std::size_t>(dim)];
  for (int64_t k = 0; k < numel(s); ++k) {
    auto idx = unravel(k, s);
    const int64_t pos = idx[static_cast<std::size_t>(dim)];
    double acc = prod ? 1 : 0;
    for (int64_t j = 0; j < n; ++j) {
      bool before = reverse ? j > pos : j < pos;
      if (!(before || (!exclusive && j == pos))) continue;
      idx[static_cast<std::size_t>(dim)] = j;
      double e = v[static_cast<std::size_t>(ravel(idx, s))];
      acc = prod ? acc * e : acc + e;
    }
    out[static_cast<std::size_t>(k)] = acc;
  }
  return make_f64(s, out);
}

// Index of the first maximum (Max) or minimum; the first NaN wins.
template <bool Max>
double first_extremum_index(const Group& g) {
  std::size_t best = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(g[i])) return double(i);
    if (Max ? g[i] > g[best] : g[i] < g[best]) best = i;
  }
  return double(best);
}
template <bool Max>
double extremum(const Group& g) {
  return g[static_cast<std::size_t>(first_extremum_index<Max>(g))];
}

inline double ref_sum(const Group& g) {
  double s = 0;
  for (double v : g) s += v;
  return s;
}
inline double ref_var(const Group& g, double correction) {
  double mean = ref_sum(g) / double(g.size()), ss = 0;
  for (double v : g) ss += (v - mean) * (v - mean);
  return ss / std::max(0.0, double(g.size()) - correction);
}
inline double ref_logsumexp(const Group& g) {
  double m = -std::numeric_limits<double>::infinity();
  for (double v : g) m = std::max(m, v);
  if (std::isinf(m)) return m;  // all -inf (or empty): -inf; any +inf: +inf
  double s = 0;
  for (double v : g) s += std::exp(v - m);
  return m + std::log(s);
}
inline double ref_norm(const Group& g, double p) {
  double acc = 0;
  if (std::isinf(p)) {
    acc = p > 0 ? 0 : INFINITY;
    for (double v : g) acc = p > 0 ? std::max(acc, std::abs(v)) : std::min(acc, std::abs(v));
    return acc;
  }
  if (p == 0) {
    for (double v : g) acc += v != 0;
    return acc;
  }
  for (double v : g) acc += std::pow(std::abs(v), p);
  return std::pow(acc, 1 / p);
}

}  // namespace ath::testing
