// Op-table rows: add, mul, div, neg.
#include "support/op_table.h"
#include "support/reference.h"

namespace ath::testing {

ATH_OP_ROWS(arithmetic) {
  auto shape_mismatch = [] { add(zeros({2, 3}), zeros({4})); };
  return {
      Row("add", "same")
          .inputs({In::randn({3, 4}), In::randn({3, 4})})
          .call([](const Tensors& x) { return add(x[0], x[1]); })
          .ref(binary_ref([](double a, double b) { return a + b; }))
          .dtypes({kFloat32, kFloat64, kBFloat16, kFloat16})
          .bad("non-broadcastable shapes", shape_mismatch),
      Row("add", "broadcast_alpha")
          .inputs({In::randn({2, 1, 4}), In::randn({3, 1})})
          .call([](const Tensors& x) { return add(x[0], x[1], 2.5); })
          .ref(binary_ref([](double a, double b) { return a + 2.5 * b; })),
      Row("add", "noncontig")
          .inputs({In::randn({3, 5}).strided(), In::randn({5}).strided()})
          .call([](const Tensors& x) { return x[0] + x[1]; })
          .ref(binary_ref([](double a, double b) { return a + b; })),
      Row("add", "zero_size")
          .inputs({In::randn({0, 3}), In::randn({3})})
          .call([](const Tensors& x) { return x[0] + x[1]; })
          .ref(binary_ref([](double a, double b) { return a + b; })),
      Row("add", "zero_dim")
          .inputs({In::randn({}), In::randn({2, 2})})
          .call([](const Tensors& x) { return x[0] - x[1]; })
          .ref(binary_ref([](double a, double b) { return a - b; })),
      Row("add", "int")
          .inputs({In::ints({4}, -5, 5), In::ints({4}, -5, 5, kInt32)})
          .call([](const Tensors& x) { return add(x[0], x[1], 3); })
          .ref(binary_ref([](double a, double b) { return a + 3 * b; }))
          .exact()
          .bad("float alpha with int tensors",
               [] { add(zeros({2}, kInt64), zeros({2}, kInt64), 0.5); }),
      Row("mul", "broadcast")
          .inputs({In::randn({2, 3}), In::randn({2, 1})})
          .call([](const Tensors& x) { return x[0] * x[1]; })
          .ref(binary_ref([](double a, double b) { return a * b; }))
          .dtypes({kFloat32, kFloat64, kBFloat16, kFloat16})
          .bad("non-broadcastable shapes",
               [] {
                 mul(zeros({2, 3}), zeros({3, 2}));
               }),
      Row("mul", "scalar")
          .inputs({In::randn({5})})
          .call([](const Tensors& x) { return x[0] * 3.0; })
          .ref(unary_ref([](double a) { return a * 3.0; })),
      Row("div", "broadcast")
          .inputs({In::randn({2, 3}), In::positive({3})})
          .call([](const Tensors& x) { return x[0] / x[1]; })
          .ref(binary_ref([](double a, double b) { return a / b; }))
          .bad("non-broadcastable shapes", [] { div(zeros({2}), zeros({3})); }),
      Row("div", "int_true_division")
          .inputs({In::ints({4}, -9, 9), In::ints({4}, 1, 5)})
          .call([](const Tensors& x) { return div(x[0], x[1]); })
          .ref(binary_ref([](double a, double b) { return a / b; }))
          .tol(1e-6, 1e-6),
      Row("neg")
          .inputs({In::randn({2, 3}).strided()})
          .call([](const Tensors& x) { return -x[0]; })
          .ref(unary_ref([](double a) { return -a; }))
          .bad("bool input", [] { neg(zeros({2}, kBool)); }),
  };
}

}  // namespace ath::testing
