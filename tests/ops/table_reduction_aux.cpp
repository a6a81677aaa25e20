// Op-table rows: reduction_aux, the internal helper the statistics ops' gradients use.
#include <cmath>
#include <functional>
#include <string>

#include "athanor/ops/reduction_aux.h"
#include "support/op_table.h"
#include "support/reference.h"

namespace ath::testing {

namespace {
Row aux_row(const std::string& label, AuxAttrs a, In in, std::function<double(double)> f) {
  return Row("reduction_aux", label)
      .inputs({std::move(in)})
      .call([a](const Tensors& x) { return reduction_aux(x[0], a); })
      .ref(unary_ref(std::move(f)));
}
double sign(double v) { return v > 0 ? 1 : v < 0 ? -1 : 0; }
}  // namespace

ATH_OP_ROWS(reduction_aux) {
  return {
      aux_row("sign", {.fn = AuxFn::SignPow, .q = 0}, In::randn({3, 4}).strided(), sign)
          .dtypes({kFloat32, kFloat64, kBFloat16})
          .bad("integer input", [] { reduction_aux(zeros({2}, kInt64), {}); }),
      aux_row("sign_pow", {.fn = AuxFn::SignPow, .q = 1.5}, In::randn({3, 4}),
              [](double v) { return sign(v) * std::pow(std::abs(v), 1.5); }),
      aux_row("abs", {.fn = AuxFn::AbsPow, .q = 1}, In::randn({3, 4}),
              [](double v) { return std::abs(v); }),
      aux_row("abs_pow", {.fn = AuxFn::AbsPow, .q = -0.5}, In::uniform({3, 4}, -2, -0.3),
              [](double v) { return std::pow(std::abs(v), -0.5); }),
      aux_row("recip0", {.fn = AuxFn::Recip0}, In::uniform({3, 4}, 0.3, 2),
              [](double v) { return 1 / v; }),
      aux_row("at_zero", {.fn = AuxFn::Recip0}, In::fixed({3}, {0, 2, -4}).no_grad(),
              [](double v) { return v == 0 ? 0 : 1 / v; }),
      aux_row("pow_at_zero", {.fn = AuxFn::AbsPow, .q = -1}, In::fixed({2}, {0, 2}).no_grad(),
              [](double v) { return v == 0 ? 0 : 1 / std::abs(v); }),
  };
}

}  // namespace ath::testing
