// Op-table rows: to_dtype, clone, copy, fill.
#include "support/op_table.h"
#include "support/reference.h"

namespace ath::testing {

ATH_OP_ROWS(copy_ops) {
  return {
      Row("to_dtype", "f32_to_f64")
          .inputs({In::randn({2, 3}).strided()})
          .call([](const Tensors& x) { return x[0].to(kFloat64); })
          .ref(unary_ref([](double a) { return a; })),
      Row("to_dtype", "to_int_truncates")
          .inputs({In::uniform({6}, -5, 5)})
          .call([](const Tensors& x) { return x[0].to(kInt32); })
          .ref(unary_ref([](double a) { return std::trunc(a); }))
          .exact()
          .no_gradcheck(),
      Row("to_dtype", "to_bool")
          .inputs({In::fixed({4}, {0, 1.5, -2, 0})})
          .call([](const Tensors& x) { return x[0].to(kBool); })
          .ref(unary_ref([](double a) { return a != 0 ? 1.0 : 0.0; }))
          .exact()
          .no_gradcheck(),
      Row("clone")
          .inputs({In::randn({3, 2}).strided()})
          .call([](const Tensors& x) { return x[0].clone(); })
          .ref(unary_ref([](double a) { return a; }))
          .dtypes({kFloat32, kFloat64, kBFloat16, kFloat16}),
      Row("copy", "broadcast")
          .inputs({In::randn({2, 3}), In::randn({3})})
          .call([](const Tensors& x) {
            Tensor d = x[0].clone();
            d.copy_(x[1]);
            return d;
          })
          .ref([](const Tensors& x) { return binary_ref([](double, double b) { return b; })(x); })
          .bad("non-broadcastable source",
               [] {
                 Tensor d = zeros({2, 3});
                 d.copy_(zeros({2}));
               }),
      Row("fill")
          .inputs({In::randn({2, 3})})
          .call([](const Tensors& x) {
            Tensor d = x[0] * 1.0;
            d.fill_(2.5);
            return d;
          })
          .ref(unary_ref([](double) { return 2.5; })),
  };
}

}  // namespace ath::testing
