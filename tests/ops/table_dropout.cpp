// Op-table rows: dropout, dropout_backward.
#include "support/op_table.h"
#include "support/reference.h"

namespace ath::testing {

namespace {

constexpr uint64_t kSeed = 1234;

// dropout with a fresh generator per call, so every call (dtypes, gradcheck) draws one mask.
OpFn dropout_call(double p) {
  return [=](const Tensors& x) {
    Generator gen(kSeed);
    return dropout(x[0], p, true, &gen);
  };
}

// The same mask from the documented rule: keep element i when philox_uniform >= p (counters
// start at 0 for a fresh generator).
RefFn dropout_ref(double p) {
  return [=](const Tensors& x) {
    std::vector<double> v = values(x[0]);
    for (std::size_t i = 0; i < v.size(); ++i) {
      bool keep = double(philox_uniform(kSeed, 0, i)) >= p;
      v[i] = keep ? (p >= 1 ? 0.0 : v[i] / (1 - p)) : 0.0;
    }
    return make_f64(x[0].shape(), v);
  };
}

}  // namespace

ATH_OP_ROWS(dropout) {
  return {
      Row("dropout", "half")
          .inputs({In::randn({4, 9})})
          .call(dropout_call(0.5))
          .ref(dropout_ref(0.5))
          .dtypes({kFloat32, kFloat64, kBFloat16})
          .bad("p above 1", [] { dropout(zeros({3}), 1.5); })
          .bad("p below 0", [] { dropout(zeros({3}), -0.1); })
          .bad("integer input", [] { dropout(zeros({3}, kInt64), 0.5); }),
      Row("dropout", "strided_p02")
          .inputs({In::randn({3, 5}).strided()})
          .call(dropout_call(0.2))
          .ref(dropout_ref(0.2)),
      Row("dropout", "p_one_gives_zeros")
          .inputs({In::randn({2, 3})})
          .call(dropout_call(1.0))
          .ref(dropout_ref(1.0)),
      Row("dropout", "zero_size")
          .inputs({In::randn({0, 4})})
          .call(dropout_call(0.3))
          .ref(dropout_ref(0.3)),
      Row("dropout_backward")
          .inputs({In::randn({3, 4}), In::bools({3, 4})})
          .call([](const Tensors& x) {
            return call1(op_dropout_backward(), {x[0], x[1]}, DropoutBackwardAttrs{.scale = 2.5});
          })
          .ref(binary_ref([](double g, double m) { return m != 0 ? g * 2.5 : 0.0; }))
          .dtypes({kFloat32, kFloat64, kBFloat16})
          .bad("float mask",
               [] {
                 call1(op_dropout_backward(), {zeros({2}), zeros({2})}, DropoutBackwardAttrs{});
               })
          .bad("shape mismatch",
               [] {
                 call1(op_dropout_backward(), {zeros({2}), zeros({3}, kBool)},
                       DropoutBackwardAttrs{});
               }),
  };
}

}  // namespace ath::testing
