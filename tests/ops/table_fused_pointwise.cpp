// Op-table rows: fused_pointwise (a program of element-wise steps; its exhaustive bit-identity
// tests against the unfused ops are in tests/graph/test_fusion.cpp).
#include "athanor/ops/fused_pointwise.h"
#include "support/op_table.h"
#include "support/reference.h"

namespace ath::testing {

namespace {

// -(a * (b > s) - 0.5 * a): a mask, a conversion, a product, a scaled add and a negation.
PointwiseProgram masked_program() {
  PointwiseProgram p;
  const int32_t a = p.add_input(kFloat32), b = p.add_input(kFloat32), s = p.add_input(kFloat32);
  const int32_t mask = p.add_step(PointwiseCode::ToFloat, p.add_step(PointwiseCode::Gt, b, s));
  const int32_t masked = p.add_step(PointwiseCode::Mul, a, mask);
  p.add_step(PointwiseCode::Neg, p.add_step(PointwiseCode::Add, masked, a, -0.5f));
  return p;
}

}  // namespace

ATH_OP_ROWS(fused_pointwise) {
  return {
      Row("fused_pointwise", "mask_mul_add_neg")
          .inputs({In::randn({3, 5}).no_grad(), In::randn({3, 5}).no_grad(),
                   In::fixed({}, {0.25}).no_grad()})
          .call([](const Tensors& x) {
            return fused_pointwise({x[0], x[1], x[2]}, masked_program());
          })
          .ref([](const Tensors& x) {
            std::vector<double> a = values(x[0]), b = values(x[1]), out(a.size());
            const double s = values(x[2])[0];
            for (std::size_t i = 0; i < a.size(); ++i)
              out[i] = -(a[i] * (b[i] > s ? 1.0 : 0.0) - 0.5 * a[i]);
            return make_f64(x[0].shape(), out);
          })
          .dtypes({kFloat32})
          .no_gradcheck()
          .bad("an input of another shape",
               [] {
                 fused_pointwise({ones({3}), ones({4}), zeros({})}, masked_program());
               })
          .bad("a float64 input",
               [] {
                 fused_pointwise({ones({3}, kFloat64), ones({3}), zeros({})}, masked_program());
               }),
  };
}

}  // namespace ath::testing
