// Op-table rows: sort (and argsort), topk.
// References are naive float64 loops over row-major values.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "support/op_table.h"
#include "support/reference.h"

namespace ath::testing {

namespace {

// Sorted (values, indices) of one slice; NaN largest; ties in index order.
std::vector<int64_t> order(const std::vector<double>& v, bool descending) {
  std::vector<int64_t> p(v.size());
  std::iota(p.begin(), p.end(), 0);
  auto key = [&](int64_t i) { return std::isnan(v[i]) ? INFINITY : v[i]; };
  auto nan_rank = [&](int64_t i) { return std::isnan(v[i]) ? 1 : 0; };
  std::stable_sort(p.begin(), p.end(), [&](int64_t a, int64_t b) {
    if (nan_rank(a) != nan_rank(b))
      return descending ? nan_rank(a) > nan_rank(b) : nan_rank(a) < nan_rank(b);
    return descending ? key(a) > key(b) : key(a) < key(b);
  });
  return p;
}

// Sorts (or takes the first k of) x along dim; returns values or indices.
Tensor sort_ref(const Tensor& x, int64_t dim, bool descending, int64_t k, bool indices) {
  if (x.dim() == 0) return indices ? zeros({}, kFloat64) : x.clone();
  std::vector<double> v = values(x);
  Shape out_shape = x.shape();
  out_shape[dim] = k;
  std::vector<double> out(static_cast<std::size_t>(numel(out_shape)));
  for (int64_t o = 0; o < numel(out_shape); ++o) {
    auto i = unravel(o, out_shape);
    if (i[dim] != 0) continue;  // one visit per slice
    std::vector<double> slice;
    for (int64_t j = 0; j < x.shape()[dim]; ++j) {
      auto xi = i;
      xi[dim] = j;
      slice.push_back(v[ravel(xi, x.shape())]);
    }
    std::vector<int64_t> p = order(slice, descending);
    for (int64_t j = 0; j < k; ++j) {
      auto oi = i;
      oi[dim] = j;
      out[ravel(oi, out_shape)] = indices ? double(p[j]) : slice[p[j]];
    }
  }
  return make_f64(out_shape, out);
}

}  // namespace

ATH_OP_ROWS(sort_topk) {
  const std::vector<DType> all_float{kFloat32, kFloat64, kBFloat16, kFloat16};
  return {
      // ---- sort / argsort ----
      Row("sort", "values_dim1")
          .inputs({In::randn({3, 5})})
          .call([](const Tensors& x) { return sort(x[0], 1).first; })
          .ref([](const Tensors& x) { return sort_ref(x[0], 1, false, 5, false); })
          .dtypes(all_float)
          .bad("dim out of range",
               [] {
                 sort(zeros({2, 3}), 2);
               }),
      Row("sort", "descending_dim0_strided")
          .inputs({In::randn({4, 3}).strided()})
          .call([](const Tensors& x) { return sort(x[0], 0, true).first; })
          .ref([](const Tensors& x) { return sort_ref(x[0], 0, true, 4, false); }),
      Row("sort", "argsort_ties_nan")
          .inputs({In::fixed({7}, {2, NAN, -1, 2, 0, NAN, -1})})
          .call([](const Tensors& x) { return argsort(x[0], 0, true); })
          .ref([](const Tensors& x) { return sort_ref(x[0], 0, true, 7, true); })
          .exact(),
      Row("sort", "argsort_ascending_ints")
          .inputs({In::ints({3, 6}, -3, 3)})
          .call([](const Tensors& x) { return argsort(x[0]); })
          .ref([](const Tensors& x) { return sort_ref(x[0], 1, false, 6, true); })
          .exact(),
      Row("sort", "zero_dim")
          .inputs({In::randn({})})
          .call([](const Tensors& x) { return sort(x[0]).first; })
          .ref([](const Tensors& x) { return x[0].clone(); }),

      // ---- topk ----
      Row("topk", "largest")
          .inputs({In::randn({4, 6})})
          .call([](const Tensors& x) { return topk(x[0], 3).first; })
          .ref([](const Tensors& x) { return sort_ref(x[0], 1, true, 3, false); })
          .dtypes(all_float)
          .bad("k too large",
               [] {
                 topk(zeros({2, 3}), 4);
               })
          .bad("negative k",
               [] {
                 topk(zeros({2, 3}), -1);
               }),
      Row("topk", "smallest_indices_dim0")
          .inputs({In::randn({5, 3}).strided()})
          .call([](const Tensors& x) { return topk(x[0], 2, 0, false).second; })
          .ref([](const Tensors& x) { return sort_ref(x[0], 0, false, 2, true); })
          .exact(),
      Row("topk", "nan_ties")
          .inputs({In::fixed({6}, {1, NAN, 3, 3, -2, 1})})
          .call([](const Tensors& x) { return topk(x[0], 4).second; })
          .ref([](const Tensors& x) { return sort_ref(x[0], 0, true, 4, true); })
          .exact(),
      Row("topk", "k0")
          .inputs({In::randn({2, 3})})
          .call([](const Tensors& x) { return topk(x[0], 0).first; })
          .ref([](const Tensors&) {
            return zeros({2, 0}, kFloat64);
          }),
  };
}

}  // namespace ath::testing
