// Op-table rows: amax, amin, max/min along a dim (max_dim, min_dim), argmax, argmin.
// Random-normal inputs have no ties, so "first occurrence" is unambiguous; the ties rows use
// fixed values.
#include "ops/reduction_refs.h"

namespace ath::testing {

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();

RefFn amax_ref(DimList dims, bool keepdim) { return group(dims, keepdim, extremum<true>); }
RefFn amin_ref(DimList dims, bool keepdim) { return group(dims, keepdim, extremum<false>); }
RefFn argmax_ref(DimList dims, bool keepdim) {
  return group(dims, keepdim, first_extremum_index<true>);
}
RefFn argmin_ref(DimList dims, bool keepdim) {
  return group(dims, keepdim, first_extremum_index<false>);
}
// Ties: row 0 has its max twice, row 1 its max twice and its min twice.
In ties() { return In::fixed({2, 3}, {1, 3, 3, 2, 2, 1}); }
}  // namespace

ATH_OP_ROWS(extrema) {
  return {
      Row("amax", "all")
          .inputs({In::randn({3, 4})})
          .call([](const Tensors& x) { return amax(x[0]); })
          .ref(amax_ref({}, false))
          .dtypes({kFloat32, kFloat64, kBFloat16})
          .bad("empty input, all dims",
               [] {
                 amax(zeros({0, 3}));
               })
          .bad("empty reduced dim",
               [] {
                 amax(zeros({0, 3}), {0});
               })
          .bad("dim out of range",
               [] {
                 amax(zeros({2, 3}), {2});
               })
          .bad("repeated dim",
               [] {
                 amax(zeros({2, 3}), {0, -2});
               }),
      Row("amax", "dims_keepdim")
          .inputs({In::randn({2, 3, 4}).strided()})
          .call([](const Tensors& x) {
            return amax(x[0], {0, 2}, true);
          })
          .ref(amax_ref({0, 2}, true)),
      Row("amax", "neg_dim")
          .inputs({In::randn({3, 5})})
          .call([](const Tensors& x) { return amax(x[0], {-1}); })
          .ref(amax_ref({1}, false)),
      Row("amax", "outer")  // reduced dims in front of a kept inner dim: the in-place path
          .inputs({In::randn({40, 3})})
          .call([](const Tensors& x) { return amax(x[0], {0}); })
          .ref(amax_ref({0}, false)),
      Row("amax", "middle")
          .inputs({In::randn({2, 9, 3})})
          .call([](const Tensors& x) { return amax(x[0], {1}, true); })
          .ref(amax_ref({1}, true)),
      Row("amax", "ties")  // gradient split evenly, as PyTorch (and central differences)
          .inputs({ties()})
          .call([](const Tensors& x) { return amax(x[0], {1}); })
          .ref(amax_ref({1}, false)),
      Row("amax", "max_full")
          .inputs({In::fixed({2, 2}, {1, 4, 4, 0})})
          .call([](const Tensors& x) { return max(x[0]); })
          .ref(amax_ref({}, false)),
      Row("amax", "nan")
          .inputs({In::fixed({2, 3}, {1, kNaN, 2, 0, -1, -2})})
          .call([](const Tensors& x) { return amax(x[0], {1}); })
          .ref(amax_ref({1}, false))
          .no_gradcheck(),
      Row("amax", "zero_size")
          .inputs({In::randn({0, 3})})
          .call([](const Tensors& x) { return amax(x[0], {1}); })
          .ref(amax_ref({1}, false)),
      Row("amax", "zero_dim")
          .inputs({In::randn({})})
          .call([](const Tensors& x) { return amax(x[0], {0}, true); })
          .ref(amax_ref({}, false)),
      Row("amax", "int")
          .inputs({In::ints({3, 4}, -100, 100, kInt32)})
          .call([](const Tensors& x) { return amax(x[0], {0}); })
          .ref(amax_ref({0}, false))
          .exact(),
      Row("amax", "bool")
          .inputs({In::bools({3, 4})})
          .call([](const Tensors& x) { return amax(x[0], {1}); })
          .ref(amax_ref({1}, false))
          .exact(),
      Row("amin", "dims")
          .inputs({In::randn({2, 3, 4}).strided()})
          .call([](const Tensors& x) {
            return amin(x[0], {-1, 0});
          })
          .ref(amin_ref({0, 2}, false))
          .dtypes({kFloat32, kFloat64, kBFloat16})
          .bad("empty reduced dim",
               [] {
                 amin(zeros({3, 0}), {1});
               }),
      Row("amin", "outer")
          .inputs({In::randn({30, 5})})
          .call([](const Tensors& x) { return amin(x[0], {0}, true); })
          .ref(amin_ref({0}, true)),
      Row("amin", "ties_min_full")
          .inputs({ties()})
          .call([](const Tensors& x) { return min(x[0]); })
          .ref(amin_ref({}, false)),
      Row("amin", "int")
          .inputs({In::ints({3, 4}, -100, 100)})
          .call([](const Tensors& x) { return amin(x[0]); })
          .ref(amin_ref({}, false))
          .exact(),

      Row("max_dim", "values")
          .inputs({In::randn({3, 5})})
          .call([](const Tensors& x) { return max(x[0], 1).values; })
          .ref(amax_ref({1}, false))
          .dtypes({kFloat32, kFloat64, kBFloat16})
          .bad("dim out of range",
               [] {
                 max(zeros({2, 3}), 2);
               })
          .bad("empty reduced dim",
               [] {
                 max(zeros({0, 3}), 0);
               }),
      Row("max_dim", "indices")
          .inputs({In::randn({3, 5})})
          .call([](const Tensors& x) { return max(x[0], 1).indices; })
          .ref(argmax_ref({1}, false))
          .exact(),
      Row("max_dim", "keepdim_neg_strided")
          .inputs({In::randn({2, 3, 4}).strided()})
          .call([](const Tensors& x) { return max(x[0], -2, true).values; })
          .ref(amax_ref({1}, true)),
      Row("max_dim", "keepdim_indices")
          .inputs({In::randn({2, 3, 4}).strided()})
          .call([](const Tensors& x) { return max(x[0], -2, true).indices; })
          .ref(argmax_ref({1}, true))
          .exact(),
      Row("max_dim", "outer_values")
          .inputs({In::randn({50, 4})})
          .call([](const Tensors& x) { return max(x[0], 0).values; })
          .ref(amax_ref({0}, false)),
      Row("max_dim", "outer_indices")
          .inputs({In::randn({50, 4})})
          .call([](const Tensors& x) { return max(x[0], 0).indices; })
          .ref(argmax_ref({0}, false))
          .exact(),
      Row("max_dim", "ties_indices")  // first occurrence, as PyTorch: [1, 0]
          .inputs({ties()})
          .call([](const Tensors& x) { return max(x[0], 1).indices; })
          .ref([](const Tensors&) {
            return make_f64({2}, {1, 0});
          })
          .exact(),
      Row("max_dim", "zero_dim")
          .inputs({In::randn({})})
          .call([](const Tensors& x) { return max(x[0], 0).values; })
          .ref(amax_ref({}, false)),
      Row("max_dim", "zero_size")
          .inputs({In::randn({0, 3})})
          .call([](const Tensors& x) { return max(x[0], 1).values; })
          .ref(amax_ref({1}, false)),
      Row("max_dim", "int")
          .inputs({In::ints({4, 6}, -5, 5, kInt32)})
          .call([](const Tensors& x) { return max(x[0], 1).indices; })
          .ref(argmax_ref({1}, false))
          .exact(),
      Row("min_dim", "values")
          .inputs({In::randn({4, 3}).strided()})
          .call([](const Tensors& x) { return min(x[0], 0).values; })
          .ref(amin_ref({0}, false))
          .dtypes({kFloat32, kFloat64, kBFloat16}),
      Row("min_dim", "indices")
          .inputs({In::randn({4, 3})})
          .call([](const Tensors& x) { return min(x[0], -1, true).indices; })
          .ref(argmin_ref({1}, true))
          .exact(),
      Row("min_dim", "ties_indices")  // [0, 2]
          .inputs({In::fixed({2, 3}, {1, 3, 1, 2, 2, 1})})
          .call([](const Tensors& x) { return min(x[0], 1).indices; })
          .ref([](const Tensors&) {
            return make_f64({2}, {0, 2});
          })
          .exact(),

      Row("argmax", "flat")
          .inputs({In::randn({3, 4})})
          .call([](const Tensors& x) { return argmax(x[0]); })
          .ref(argmax_ref({}, false))
          .exact()
          .bad("empty input", [] { argmax(zeros({0})); })
          .bad("empty reduced dim",
               [] {
                 argmax(zeros({0, 2}), 0);
               })
          .bad("bool input", [] { argmax(zeros({2}, kBool)); })
          .bad("dim out of range", [] { argmax(zeros({2}), 1); }),
      Row("argmax", "flat_keepdim")  // all-ones shape, as PyTorch
          .inputs({In::randn({3, 4}).strided()})
          .call([](const Tensors& x) { return argmax(x[0], std::nullopt, true); })
          .ref(argmax_ref({}, true))
          .exact(),
      Row("argmax", "dim")
          .inputs({In::randn({3, 5})})
          .call([](const Tensors& x) { return argmax(x[0], 1); })
          .ref(argmax_ref({1}, false))
          .dtypes({kFloat32, kFloat64, kBFloat16})
          .exact(),
      Row("argmax", "outer_keepdim")
          .inputs({In::randn({50, 4})})
          .call([](const Tensors& x) { return argmax(x[0], 0, true); })
          .ref(argmax_ref({0}, true))
          .exact(),
      Row("argmax", "ties")
          .inputs({ties()})
          .call([](const Tensors& x) { return argmax(x[0], 1); })
          .ref([](const Tensors&) {
            return make_f64({2}, {1, 0});
          })
          .exact(),
      Row("argmax", "nan")  // the first NaN wins
          .inputs({In::fixed({5}, {1, kNaN, 3, kNaN, 0})})
          .call([](const Tensors& x) { return argmax(x[0]); })
          .ref([](const Tensors&) { return make_f64({}, {1}); })
          .exact(),
      Row("argmax", "zero_dim")
          .inputs({In::randn({})})
          .call([](const Tensors& x) { return argmax(x[0], 0); })
          .ref([](const Tensors&) { return make_f64({}, {0}); })
          .exact(),
      Row("argmax", "zero_size")
          .inputs({In::randn({0, 3})})
          .call([](const Tensors& x) { return argmax(x[0], 1, true); })
          .ref(argmax_ref({1}, true))
          .exact(),
      Row("argmax", "int")
          .inputs({In::ints({3, 7}, -1000, 1000, kInt32)})
          .call([](const Tensors& x) { return argmax(x[0], -1); })
          .ref(argmax_ref({1}, false))
          .exact(),
      Row("argmin", "dim")
          .inputs({In::randn({2, 3, 4}).strided()})
          .call([](const Tensors& x) { return argmin(x[0], 1); })
          .ref(argmin_ref({1}, false))
          .exact(),
      Row("argmin", "flat")
          .inputs({In::randn({3, 4})})
          .call([](const Tensors& x) { return argmin(x[0]); })
          .ref(argmin_ref({}, false))
          .exact()
          .bad("empty input",
               [] {
                 argmin(zeros({0, 3}));
               }),
      Row("argmin", "ties")
          .inputs({ties()})
          .call([](const Tensors& x) { return argmin(x[0], 1); })
          .ref([](const Tensors&) {
            return make_f64({2}, {0, 2});
          })
          .exact(),
  };
}

}  // namespace ath::testing
