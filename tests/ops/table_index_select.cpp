// Op-table rows: index_select, index_add.
// References are naive float64 loops over row-major values.
#include "support/op_table.h"
#include "support/reference.h"

namespace ath::testing {

namespace {

Tensor ids(std::vector<int64_t> v) { return from_vector(v); }
[[maybe_unused]] Tensor ids(std::vector<int64_t> v, const Shape& s) { return from_vector(v, s); }
std::vector<int64_t> ints(const Tensor& t) { return t.to_vector<int64_t>(); }

// x with `dim` indexed by `index` (a vector): out[.., i, ..] = x[.., index[i], ..].
Tensor index_select_ref(const Tensor& x, int64_t dim, const std::vector<int64_t>& index) {
  std::vector<double> v = values(x), out;
  Shape s = x.shape();
  s[dim] = static_cast<int64_t>(index.size());
  for (int64_t k = 0; k < numel(s); ++k) {
    auto i = unravel(k, s);
    i[dim] = index[i[dim]];
    out.push_back(v[ravel(i, x.shape())]);
  }
  return make_f64(s, out);
}

Tensor index_add_ref(const Tensor& self, int64_t dim, const std::vector<int64_t>& index,
                     const Tensor& src, double alpha) {
  std::vector<double> out = values(self), sv = values(src);
  for (int64_t k = 0; k < src.numel(); ++k) {
    auto i = unravel(k, src.shape());
    i[dim] = index[i[dim]];
    out[ravel(i, self.shape())] += alpha * sv[k];
  }
  return make_f64(self.shape(), out);
}

}  // namespace

ATH_OP_ROWS(index_select) {
  const std::vector<DType> all_float{kFloat32, kFloat64, kBFloat16, kFloat16};
  return {
      // ---- index_select ----
      Row("index_select", "dim1")
          .inputs({In::randn({3, 4}), In::ints({5}, 0, 4)})
          .call([](const Tensors& x) { return index_select(x[0], 1, x[1]); })
          .ref([](const Tensors& x) { return index_select_ref(x[0], 1, ints(x[1])); })
          .dtypes(all_float)
          .bad("index out of range",
               [] {
                 index_select(zeros({2, 4}), 1, ids({4}));
               })
          .bad("negative index",
               [] {
                 index_select(zeros({2, 4}), 1, ids({-1}));
               })
          .bad("float index",
               [] {
                 index_select(zeros({2, 4}), 1, zeros({1}));
               })
          .bad("2-d index",
               [] {
                 index_select(zeros({2, 4}), 1, ids({0, 1}, Shape{1, 2}));
               })
          .bad("dim out of range",
               [] {
                 index_select(zeros({2, 4}), 2, ids({0}));
               }),
      Row("index_select", "strided_int32_negdim")
          .inputs({In::randn({4, 3}).strided(), In::ints({3}, 0, 4, kInt32)})
          .call([](const Tensors& x) { return index_select(x[0], -2, x[1]); })
          .ref([](const Tensors& x) { return index_select_ref(x[0], 0, ints(x[1])); }),
      Row("index_select", "zero_dim")
          .inputs({In::randn({}), In::ints({1}, 0, 1)})
          .call([](const Tensors& x) { return index_select(x[0], 0, x[1]); })
          .ref([](const Tensors& x) { return x[0].clone(); }),
      Row("index_select", "empty_index")
          .inputs({In::randn({3, 2}), In::ints({0}, 0, 3)})
          .call([](const Tensors& x) { return index_select(x[0], 0, x[1]); })
          .ref([](const Tensors&) {
            return zeros({0, 2}, kFloat64);
          }),
      Row("index_select", "int_values")
          .inputs({In::ints({4, 2}, -9, 9), In::ints({6}, 0, 4)})
          .call([](const Tensors& x) { return index_select(x[0], 0, x[1]); })
          .ref([](const Tensors& x) { return index_select_ref(x[0], 0, ints(x[1])); })
          .exact(),

      // ---- index_add ----
      Row("index_add", "duplicates_alpha")
          .inputs({In::randn({4, 3}), In::randn({5, 3})})
          .call([](const Tensors& x) {
            return index_add(x[0], 0, ids({0, 2, 0, 3, 0}), x[1], 2.0);
          })
          .ref([](const Tensors& x) {
            return index_add_ref(x[0], 0, {0, 2, 0, 3, 0}, x[1], 2.0);
          })
          .dtypes(all_float)
          .bad("source shape",
               [] {
                 index_add(zeros({4, 3}), 0, ids({0, 1}), zeros({3, 3}));
               })
          .bad("dtype mismatch",
               [] {
                 index_add(zeros({4, 3}), 0, ids({0}), zeros({1, 3}, kFloat64));
               })
          .bad("index out of range",
               [] {
                 index_add(zeros({4, 3}), 0, ids({4}), zeros({1, 3}));
               })
          .bad("negative index",
               [] {
                 index_add(zeros({4, 3}), 0, ids({-1}), zeros({1, 3}));
               })
          .bad("float alpha on ints",
               [] { index_add(zeros({2}, kInt64), 0, ids({0}), zeros({1}, kInt64), 0.5); }),
      Row("index_add", "int32_index_dim1_strided")
          .inputs({In::randn({2, 5}).strided(), In::randn({2, 3}).strided()})
          .call([](const Tensors& x) {
            return index_add(x[0], -1, ids({4, 0, 4}).to(kInt32), x[1]);
          })
          .ref([](const Tensors& x) {
            return index_add_ref(x[0], 1, {4, 0, 4}, x[1], 1.0);
          }),
      Row("index_add", "ints")
          .inputs({In::ints({3, 2}, -5, 5), In::ints({4, 2}, -5, 5)})
          .call([](const Tensors& x) {
            return index_add(x[0], 0, ids({1, 1, 0, 2}), x[1], 3);
          })
          .ref([](const Tensors& x) {
            return index_add_ref(x[0], 0, {1, 1, 0, 2}, x[1], 3.0);
          })
          .exact(),
  };
}

}  // namespace ath::testing
