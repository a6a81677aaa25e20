// Op-table rows: sum, mean.
#include "support/op_table.h"
#include "support/reference.h"

namespace ath::testing {

namespace {
RefFn sum_ref(DimList dims, bool keepdim) {
  return [=](const Tensors& x) {
    return reduce_ref(x[0], dims, keepdim, 0, [](double a, double b) { return a + b; });
  };
}
RefFn mean_ref(DimList dims, bool keepdim) {
  return [=](const Tensors& x) {
    return reduce_ref(
        x[0], dims, keepdim, 0, [](double a, double b) { return a + b; },
        [](double v, int64_t n) { return v / static_cast<double>(n); });
  };
}
}  // namespace

ATH_OP_ROWS(sum_mean) {
  return {
      Row("sum", "all")
          .inputs({In::randn({3, 4})})
          .call([](const Tensors& x) { return sum(x[0]); })
          .ref(sum_ref({}, false))
          .dtypes({kFloat32, kFloat64, kBFloat16, kFloat16})
          .bad("dim out of range",
               [] {
                 sum(zeros({2, 3}), {2});
               })
          .bad("repeated dim",
               [] {
                 sum(zeros({2, 3}), {1, -1});
               }),
      Row("sum", "dims_keepdim")
          .inputs({In::randn({2, 3, 4}).strided()})
          .call([](const Tensors& x) {
            return sum(x[0], {0, 2}, true);
          })
          .ref(sum_ref({0, 2}, true)),
      Row("sum", "last")
          .inputs({In::randn({3, 70})})
          .call([](const Tensors& x) { return sum(x[0], {-1}); })
          .ref(sum_ref({1}, false)),
      Row("sum", "first")
          .inputs({In::randn({70, 3})})
          .call([](const Tensors& x) { return sum(x[0], {0}); })
          .ref(sum_ref({0}, false)),
      // The in-place outer path: a block of leading reduced dims before kept inner dims.
      Row("sum", "outer_wide")  // more kept elements than one block: row-by-row accumulation
          .inputs({In::randn({20, 300})})
          .call([](const Tensors& x) { return sum(x[0], {0}); })
          .ref(sum_ref({0}, false))
          .dtypes({kFloat32, kFloat64, kBFloat16}),
      Row("sum", "outer_middle")
          .inputs({In::randn({2, 37, 1, 3})})
          .call([](const Tensors& x) {
            return sum(x[0], {1, 2}, true);
          })
          .ref(sum_ref({1, 2}, true)),
      Row("sum", "outer_int")
          .inputs({In::ints({50, 3}, -100, 100, kInt32)})
          .call([](const Tensors& x) { return sum(x[0], {0}); })
          .ref(sum_ref({0}, false))
          .exact(),
      Row("mean", "outer")
          .inputs({In::randn({45, 4})})
          .call([](const Tensors& x) { return mean(x[0], {0}, true); })
          .ref(mean_ref({0}, true))
          .dtypes({kFloat32, kFloat64, kBFloat16}),
      Row("sum", "zero_size")
          .inputs({In::randn({0, 3})})
          .call([](const Tensors& x) { return sum(x[0], {0}); })
          .ref(sum_ref({0}, false)),
      Row("sum", "zero_dim")
          .inputs({In::randn({})})
          .call([](const Tensors& x) { return sum(x[0]); })
          .ref(sum_ref({}, false)),
      Row("sum", "int")
          .inputs({In::ints({3, 4}, -100, 100, kInt32)})
          .call([](const Tensors& x) { return sum(x[0], {1}); })
          .ref(sum_ref({1}, false))
          .exact(),
      Row("mean", "all")
          .inputs({In::randn({3, 4})})
          .call([](const Tensors& x) { return mean(x[0]); })
          .ref(mean_ref({}, false))
          .dtypes({kFloat32, kFloat64, kBFloat16})
          .bad("integer input", [] { mean(zeros({2}, kInt64)); }),
      Row("mean", "dims")
          .inputs({In::randn({2, 3, 4}).strided()})
          .call([](const Tensors& x) { return mean(x[0], {1}, false); })
          .ref(mean_ref({1}, false)),
  };
}

}  // namespace ath::testing
