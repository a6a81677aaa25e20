// Op-table rows: softmax, log_softmax and their backward ops.
#include "ops/nn_reference.h"
#include "support/op_table.h"
#include "support/reference.h"

namespace ath::testing {

namespace {

RefFn softmax_rows_ref(int64_t dim, bool log) {
  return [=](const Tensors& x) {
    int64_t d = x[0].dim() == 0 ? 0 : (dim < 0 ? dim + x[0].dim() : dim);
    return softmax_ref(x[0], d, log);
  };
}

// y * (g - sum(g * y)) or g - exp(y) * sum(g), along dim; inputs (g, y).
Tensor softmax_backward_ref(const Tensor& g, const Tensor& y, int64_t dim, bool log) {
  std::vector<double> gv = values(g), yv = values(y), out(gv.size());
  for (const auto& s : slices_along(g.shape(), dim)) {
    double acc = 0;
    for (int64_t k : s) acc += log ? gv[k] : gv[k] * yv[k];
    for (int64_t k : s) out[k] = log ? gv[k] - std::exp(yv[k]) * acc : yv[k] * (gv[k] - acc);
  }
  return make_f64(g.shape(), out);
}

}  // namespace

ATH_OP_ROWS(softmax) {
  return {
      Row("softmax", "last")
          .inputs({In::randn({3, 7})})
          .call([](const Tensors& x) { return softmax(x[0], -1); })
          .ref(softmax_rows_ref(-1, false))
          .dtypes({kFloat32, kFloat64, kBFloat16})
          .bad("dim out of range",
               [] {
                 softmax(zeros({2, 3}), 2);
               })
          .bad("integer input",
               [] {
                 softmax(zeros({2, 3}, kInt64), 1);
               }),
      Row("softmax", "middle_dim_strided")
          .inputs({In::randn({2, 5, 3}).strided()})
          .call([](const Tensors& x) { return softmax(x[0], 1); })
          .ref(softmax_rows_ref(1, false))
          .dtypes({kFloat32, kFloat64, kBFloat16}),
      Row("softmax", "first_dim_wide_inner")
          .inputs({In::randn({4, 70})})
          .call([](const Tensors& x) { return softmax(x[0], 0); })
          .ref(softmax_rows_ref(0, false))
          .dtypes({kFloat32, kFloat64, kBFloat16}),
      Row("softmax", "large_logits")
          .inputs({In::fixed({2, 3}, {1000, 1001, 999, -1000, -1e4, -999})})
          .call([](const Tensors& x) { return softmax(x[0], 1); })
          .ref(softmax_rows_ref(1, false))
          .no_gradcheck(),
      Row("softmax", "masked_minus_inf")
          .inputs({In::fixed({2, 3}, {0.5, -INFINITY, 1.0, -INFINITY, 2.0, -INFINITY})})
          .call([](const Tensors& x) { return softmax(x[0], -1); })
          .ref(softmax_rows_ref(-1, false))
          .tol(1e-6, 0)
          .no_gradcheck(),
      Row("softmax", "zero_size")
          .inputs({In::randn({0, 3})})
          .call([](const Tensors& x) { return softmax(x[0], 1); })
          .ref(softmax_rows_ref(1, false)),
      Row("softmax", "zero_dim")
          .inputs({In::randn({})})
          .call([](const Tensors& x) { return softmax(x[0], 0); })
          .ref(softmax_rows_ref(0, false)),
      Row("log_softmax", "last")
          .inputs({In::randn({3, 7})})
          .call([](const Tensors& x) { return log_softmax(x[0], -1); })
          .ref(softmax_rows_ref(-1, true))
          .dtypes({kFloat32, kFloat64, kBFloat16})
          .bad("dim out of range",
               [] {
                 log_softmax(zeros({2, 3}), -3);
               }),
      Row("log_softmax", "middle_dim_strided")
          .inputs({In::randn({2, 5, 3}).strided()})
          .call([](const Tensors& x) { return log_softmax(x[0], 1); })
          .ref(softmax_rows_ref(1, true))
          .dtypes({kFloat32, kFloat64, kBFloat16}),
      Row("log_softmax", "first_dim_wide_inner")
          .inputs({In::randn({3, 130})})
          .call([](const Tensors& x) { return log_softmax(x[0], 0); })
          .ref(softmax_rows_ref(0, true)),
      Row("log_softmax", "large_logits")
          .inputs({In::fixed({2, 3}, {1000, 1001, 999, -1000, -1e4, -999})})
          .call([](const Tensors& x) { return log_softmax(x[0], 1); })
          .ref(softmax_rows_ref(1, true))
          .no_gradcheck(),
      Row("log_softmax", "zero_size")
          .inputs({In::randn({2, 0})})
          .call([](const Tensors& x) { return log_softmax(x[0], 1); })
          .ref(softmax_rows_ref(1, true)),
      Row("softmax_backward", "last")
          .inputs({In::randn({3, 6}), In::uniform({3, 6}, 0.05, 1)})
          .call([](const Tensors& x) {
            return call1(op_softmax_backward(), {x[0], x[1]}, SoftmaxAttrs{.dim = 1});
          })
          .ref([](const Tensors& x) { return softmax_backward_ref(x[0], x[1], 1, false); })
          .dtypes({kFloat32, kFloat64, kBFloat16})
          .bad("shape mismatch",
               [] {
                 call1(op_softmax_backward(), {zeros({2, 3}), zeros({3, 2})},
                       SoftmaxAttrs{.dim = 1});
               }),
      Row("softmax_backward", "middle_dim_strided")
          .inputs({In::randn({2, 4, 3}).strided(), In::uniform({2, 4, 3}, 0.05, 1)})
          .call([](const Tensors& x) {
            return call1(op_softmax_backward(), {x[0], x[1]}, SoftmaxAttrs{.dim = 1});
          })
          .ref([](const Tensors& x) { return softmax_backward_ref(x[0], x[1], 1, false); }),
      // y must be a log_softmax output (the double backward uses exp(y) == softmax(y)), so the
      // row differentiates through log_softmax too: inputs (g, x).
      Row("log_softmax_backward", "last")
          .inputs({In::randn({3, 6}), In::randn({3, 6})})
          .call([](const Tensors& x) {
            return call1(op_log_softmax_backward(), {x[0], log_softmax(x[1], 1)},
                         SoftmaxAttrs{.dim = 1});
          })
          .ref([](const Tensors& x) {
            return softmax_backward_ref(x[0], softmax_ref(x[1], 1, true), 1, true);
          })
          .dtypes({kFloat32, kFloat64, kBFloat16})
          .bad("integer grad",
               [] {
                 call1(op_log_softmax_backward(), {zeros({2}, kInt64), zeros({2}, kInt64)},
                       SoftmaxAttrs{.dim = 0});
               }),
      Row("log_softmax_backward", "first_dim_strided")
          .inputs({In::randn({4, 3, 2}).strided(), In::randn({4, 3, 2})})
          .call([](const Tensors& x) {
            return call1(op_log_softmax_backward(), {x[0], log_softmax(x[1], 0)},
                         SoftmaxAttrs{.dim = 0});
          })
          .ref([](const Tensors& x) {
            return softmax_backward_ref(x[0], softmax_ref(x[1], 0, true), 0, true);
          }),
  };
}

}  // namespace ath::testing
