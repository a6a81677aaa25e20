#include "ops/nn_reference.h"

#include <cmath>

#include "support/reference.h"

namespace ath::testing {

std::vector<std::vector<int64_t>> slices_along(const Shape& shape, int64_t dim) {
  if (shape.empty()) return {{0}};
  std::vector<std::vector<int64_t>> out;
  const int64_t n = numel(shape), d = shape[static_cast<std::size_t>(dim)];
  for (int64_t k = 0; k < n; ++k) {
    auto idx = unravel(k, shape);
    if (idx[static_cast<std::size_t>(dim)] != 0) continue;
    std::vector<int64_t> s;
    for (int64_t j = 0; j < d; ++j) {
      idx[static_cast<std::size_t>(dim)] = j;
      s.push_back(ravel(idx, shape));
    }
    out.push_back(s);
  }
  return out;
}

Tensor softmax_ref(const Tensor& x, int64_t dim, bool log) {
  std::vector<double> v = values(x), out(v.size());
  for (const auto& s : slices_along(x.shape(), dim)) {
    double m = -INFINITY, sum = 0;
    for (int64_t k : s) m = std::max(m, v[k]);
    for (int64_t k : s) sum += std::exp(v[k] - m);
    for (int64_t k : s) out[k] = log ? v[k] - m - std::log(sum) : std::exp(v[k] - m) / sum;
  }
  return make_f64(x.shape(), out);
}

NormMap layer_norm_map(const Shape& x, const Shape& ns) {
  const int64_t n = numel(ns);
  return {n == 0 ? 0 : numel(x) / n, n, [n](int64_t f) { return std::pair{f / n, f % n}; }};
}

NormMap batch_norm_map(const Shape& x) {
  int64_t s = 1;
  for (std::size_t d = 2; d < x.size(); ++d) s *= x[d];
  const int64_t c = x[1];
  return {c, c, [s, c](int64_t f) { return std::pair{(f / s) % c, (f / s) % c}; }};
}

NormMap group_norm_map(const Shape& x, int64_t groups) {
  int64_t s = 1;
  for (std::size_t d = 2; d < x.size(); ++d) s *= x[d];
  const int64_t c = x[1], cg = c / groups;
  return {x[0] * groups, c, [=](int64_t f) {
            int64_t n = f / (c * s), ch = (f / s) % c;
            return std::pair{n * groups + ch / cg, ch};
          }};
}

NormStats norm_stats(const Tensor& x, const NormMap& m) {
  std::vector<double> v = values(x);
  NormStats st{std::vector<double>(m.groups, 0.0), std::vector<double>(m.groups, 0.0),
               std::vector<int64_t>(m.groups, 0)};
  for (std::size_t k = 0; k < v.size(); ++k) {
    auto [grp, p] = m.map(int64_t(k));
    st.mean[grp] += v[k];
    ++st.count[grp];
  }
  for (int64_t i = 0; i < m.groups; ++i) st.mean[i] /= double(st.count[i]);
  for (std::size_t k = 0; k < v.size(); ++k) {
    auto grp = m.map(int64_t(k)).first;
    st.var[grp] += (v[k] - st.mean[grp]) * (v[k] - st.mean[grp]);
  }
  for (int64_t i = 0; i < m.groups; ++i) st.var[i] /= double(st.count[i]);
  return st;
}

namespace {
std::vector<double> param(const Tensor& t, int64_t n, double fallback) {
  return t.defined() ? values(t) : std::vector<double>(n, fallback);
}
}  // namespace

Tensor norm_forward_ref(const Tensor& x, const Tensor& w, const Tensor& b, const NormMap& m,
                        double eps, const NormStats* stats) {
  NormStats own = stats != nullptr ? NormStats{} : norm_stats(x, m);
  const NormStats& st = stats != nullptr ? *stats : own;
  std::vector<double> v = values(x), wv = param(w, m.params, 1), bv = param(b, m.params, 0);
  std::vector<double> out(v.size());
  for (std::size_t k = 0; k < v.size(); ++k) {
    auto [grp, p] = m.map(int64_t(k));
    out[k] = (v[k] - st.mean[grp]) / std::sqrt(st.var[grp] + eps) * wv[p] + bv[p];
  }
  return make_f64(x.shape(), out);
}

NormGrads norm_backward_ref(const Tensor& g, const Tensor& x, const Tensor& w, const NormMap& m,
                            double eps, const NormStats* fixed_stats) {
  NormStats own = fixed_stats != nullptr ? NormStats{} : norm_stats(x, m);
  const NormStats& st = fixed_stats != nullptr ? *fixed_stats : own;
  std::vector<double> gv = values(g), xv = values(x), wv = param(w, m.params, 1);
  const std::size_t n = xv.size();
  std::vector<double> xh(n), gw(n), sum_gw(m.groups, 0.0), sum_gwxh(m.groups, 0.0);
  std::vector<double> dw(m.params, 0.0), db(m.params, 0.0), dx(n);
  std::vector<int64_t> count(m.groups, 0);
  for (std::size_t k = 0; k < n; ++k) {
    auto [grp, p] = m.map(int64_t(k));
    xh[k] = (xv[k] - st.mean[grp]) / std::sqrt(st.var[grp] + eps);
    gw[k] = gv[k] * wv[p];
    sum_gw[grp] += gw[k];
    sum_gwxh[grp] += gw[k] * xh[k];
    ++count[grp];
    dw[p] += gv[k] * xh[k];
    db[p] += gv[k];
  }
  for (std::size_t k = 0; k < n; ++k) {
    auto grp = m.map(int64_t(k)).first;
    double r = 1 / std::sqrt(st.var[grp] + eps), c = double(count[grp]);
    dx[k] = fixed_stats != nullptr ? gw[k] * r
                                   : r * (gw[k] - sum_gw[grp] / c - xh[k] * sum_gwxh[grp] / c);
  }
  return {make_f64(x.shape(), dx), make_f64({m.params}, dw), make_f64({m.params}, db)};
}

}  // namespace ath::testing
