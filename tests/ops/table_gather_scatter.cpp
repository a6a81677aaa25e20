// Op-table rows: gather, scatter, scatter_value, scatter_add.
// References are naive float64 loops over row-major values.
#include "support/op_table.h"
#include "support/reference.h"

namespace ath::testing {

namespace {

Tensor ids(std::vector<int64_t> v) { return from_vector(v); }
[[maybe_unused]] Tensor ids(std::vector<int64_t> v, const Shape& s) { return from_vector(v, s); }
std::vector<int64_t> ints(const Tensor& t) { return t.to_vector<int64_t>(); }

Tensor gather_ref(const Tensor& x, int64_t dim, const Tensor& index) {
  std::vector<double> v = values(x), out;
  std::vector<int64_t> iv = ints(index);
  for (int64_t k = 0; k < index.numel(); ++k) {
    auto i = unravel(k, index.shape());
    if (!i.empty()) i[dim] = iv[k];
    out.push_back(v[ravel(i, x.shape())]);
  }
  return make_f64(index.shape(), out);
}

// mode 0: assign src, 1: add src, 2: assign value. Visits index positions in row-major order.
Tensor scatter_ref(const Tensor& self, int64_t dim, const Tensor& index, const Tensor* src,
                   int mode, double value = 0) {
  std::vector<double> out = values(self), sv = src ? values(*src) : std::vector<double>{};
  std::vector<int64_t> iv = ints(index);
  for (int64_t k = 0; k < index.numel(); ++k) {
    auto i = unravel(k, index.shape());
    double s = mode == 2 ? value : sv[ravel(i, src->shape())];
    i[dim] = iv[k];
    double& d = out[ravel(i, self.shape())];
    d = mode == 1 ? d + s : s;
  }
  return make_f64(self.shape(), out);
}

}  // namespace

ATH_OP_ROWS(gather_scatter) {
  const std::vector<DType> all_float{kFloat32, kFloat64, kBFloat16, kFloat16};
  return {
      // ---- gather ----
      Row("gather", "dim1_duplicates")
          .inputs({In::randn({3, 4}), In::ints({3, 6}, 0, 4)})
          .call([](const Tensors& x) { return gather(x[0], 1, x[1]); })
          .ref([](const Tensors& x) { return gather_ref(x[0], 1, x[1]); })
          .dtypes(all_float)
          .bad("int32 index",
               [] {
                 gather(zeros({2, 3}), 1, ids({0}, Shape{1, 1}).to(kInt32));
               })
          .bad("index larger than input",
               [] {
                 gather(zeros({2, 3}), 1, ids({0, 0, 0}, Shape{3, 1}));
               })
          .bad("index out of range",
               [] {
                 gather(zeros({2, 3}), 1, ids({3}, Shape{1, 1}));
               })
          .bad("dims mismatch",
               [] {
                 gather(zeros({2, 3}), 1, ids({0}));
               }),
      Row("gather", "dim0_strided")
          .inputs({In::randn({4, 3}).strided(), In::ints({2, 2}, 0, 4)})
          .call([](const Tensors& x) { return gather(x[0], 0, x[1]); })
          .ref([](const Tensors& x) { return gather_ref(x[0], 0, x[1]); }),
      Row("gather", "zero_dim")
          .inputs({In::randn({}), In::ints({}, 0, 1)})
          .call([](const Tensors& x) { return gather(x[0], 0, x[1]); })
          .ref([](const Tensors& x) { return x[0].clone(); }),
      Row("gather", "empty_index")
          .inputs({In::randn({2, 3}), In::ints({2, 0}, 0, 3)})
          .call([](const Tensors& x) { return gather(x[0], 1, x[1]); })
          .ref([](const Tensors&) {
            return zeros({2, 0}, kFloat64);
          }),

      // ---- scatter (src) ----
      Row("scatter", "unique_larger_src")
          .inputs({In::randn({3, 4}), In::randn({2, 5})})
          .call([](const Tensors& x) {
            return scatter(x[0], 0, ids({0, 1, 2, 0, 2, 0, 1, 1}, Shape{2, 4}), x[1]);
          })
          .ref([](const Tensors& x) {
            return scatter_ref(x[0], 0, ids({0, 1, 2, 0, 2, 0, 1, 1}, Shape{2, 4}), &x[1], 0);
          })
          .dtypes(all_float)
          .bad("src dtype", [] { scatter(zeros({3}), 0, ids({0}), zeros({1}, kFloat64)); })
          .bad("index larger than src",
               [] {
                 scatter(zeros({3}), 0, ids({0, 1}), zeros({1}));
               })
          .bad("index out of range", [] { scatter(zeros({3}), 0, ids({3}), zeros({1})); })
          .bad("int32 index", [] { scatter(zeros({3}), 0, ids({0}).to(kInt32), zeros({1})); }),
      Row("scatter", "duplicates_last_wins")
          .inputs({In::randn({4}), In::randn({4})})
          .call([](const Tensors& x) {
            return scatter(x[0], 0, ids({0, 0, 1, 0}), x[1]);
          })
          .ref([](const Tensors& x) {
            return scatter_ref(x[0], 0, ids({0, 0, 1, 0}), &x[1], 0);
          })
          .no_gradcheck(),
      Row("scatter", "dim1_strided")
          .inputs({In::randn({2, 3}).strided(), In::randn({2, 2}).strided()})
          .call([](const Tensors& x) {
            return scatter(x[0], 1, ids({2, 0, 1, 2}, Shape{2, 2}), x[1]);
          })
          .ref([](const Tensors& x) {
            return scatter_ref(x[0], 1, ids({2, 0, 1, 2}, Shape{2, 2}), &x[1], 0);
          }),
      Row("scatter_value")
          .inputs({In::randn({3, 4})})
          .call([](const Tensors& x) {
            return scatter(x[0], -1, ids({3, 0, 1}, Shape{3, 1}), 2.5);
          })
          .ref([](const Tensors& x) {
            return scatter_ref(x[0], 1, ids({3, 0, 1}, Shape{3, 1}), nullptr, 2, 2.5);
          })
          .dtypes(all_float)
          .bad("index out of range",
               [] {
                 scatter(zeros({3, 4}), 1, ids({4}, Shape{1, 1}), 1.0);
               })
          .bad("dim out of range",
               [] {
                 scatter(zeros({3, 4}), 2, ids({0}, Shape{1, 1}), 1.0);
               }),

      // ---- scatter_add ----
      Row("scatter_add", "duplicates")
          .inputs({In::randn({3, 4}), In::ints({5, 4}, 0, 3), In::randn({5, 4})})
          .call([](const Tensors& x) { return scatter_add(x[0], 0, x[1], x[2]); })
          .ref([](const Tensors& x) { return scatter_ref(x[0], 0, x[1], &x[2], 1); })
          .dtypes(all_float)
          .bad("int32 index", [] { scatter_add(zeros({3}), 0, ids({0}).to(kInt32), zeros({1})); })
          .bad("index larger than self",
               [] {
                 scatter_add(zeros({2, 2}), 0, ids({0, 0, 0}, Shape{1, 3}), zeros({1, 3}));
               })
          .bad("index out of range", [] { scatter_add(zeros({3}), 0, ids({5}), zeros({1})); }),
      Row("scatter_add", "dim1_larger_src")
          .inputs({In::randn({2, 3}), In::ints({2, 2}, 0, 3), In::randn({3, 4}).strided()})
          .call([](const Tensors& x) { return scatter_add(x[0], 1, x[1], x[2]); })
          .ref([](const Tensors& x) { return scatter_ref(x[0], 1, x[1], &x[2], 1); }),
      Row("scatter_add", "ints")
          .inputs({In::ints({4}, -5, 5), In::ints({6}, 0, 4), In::ints({6}, -5, 5)})
          .call([](const Tensors& x) { return scatter_add(x[0], 0, x[1], x[2]); })
          .ref([](const Tensors& x) { return scatter_ref(x[0], 0, x[1], &x[2], 1); })
          .exact(),
  };
}

}  // namespace ath::testing
