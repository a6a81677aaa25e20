// Op-table rows: where, masked_fill, masked_select, masked_scatter, nonzero.
// References are naive float64 loops over row-major values.
#include "support/op_table.h"
#include "support/reference.h"

namespace ath::testing {

namespace {

// Row-major values of t broadcast to `shape`.
std::vector<double> broadcast_values(const Tensor& t, const Shape& shape) {
  std::vector<double> v = values(t), out;
  for (int64_t k = 0; k < numel(shape); ++k) {
    out.push_back(v[broadcast_index(unravel(k, shape), shape, t.shape())]);
  }
  return out;
}

Tensor masked_select_ref(const Tensor& x, const Tensor& mask) {
  Shape s = broadcast_shapes(x.shape(), mask.shape());
  std::vector<double> xv = broadcast_values(x, s), mv = broadcast_values(mask, s), out;
  for (std::size_t k = 0; k < xv.size(); ++k) {
    if (mv[k] != 0) out.push_back(xv[k]);
  }
  return make_f64({static_cast<int64_t>(out.size())}, out);
}

}  // namespace

ATH_OP_ROWS(masked) {
  const std::vector<DType> all_float{kFloat32, kFloat64, kBFloat16, kFloat16};
  auto select3 = [](double c, double a, double b) { return c != 0 ? a : b; };
  return {
      // ---- where ----
      Row("where", "broadcast")
          .inputs({In::bools({2, 1, 3}), In::randn({4, 1}), In::randn({3}).strided()})
          .call([](const Tensors& x) { return where(x[0], x[1], x[2]); })
          .ref(ternary_ref(select3))
          .dtypes(all_float)
          .bad("uint8 condition", [] { where(zeros({2}, kUInt8), zeros({2}), zeros({2})); })
          .bad("non-broadcastable", [] { where(zeros({2}, kBool), zeros({3}), zeros({2})); }),
      Row("where", "promote_int_float")
          .inputs({In::bools({3}), In::ints({3}, -4, 4, kInt32), In::randn({3})})
          .call([](const Tensors& x) { return where(x[0], x[1], x[2]); })
          .ref(ternary_ref(select3)),
      Row("where", "scalar_other")
          .inputs({In::bools({2, 3}), In::randn({2, 3})})
          .call([](const Tensors& x) { return where(x[0], x[1], 0.5); })
          .ref([=](const Tensors& x) {
            return ternary_ref(select3)({x[0], x[1], full({}, 0.5, kFloat64)});
          }),
      Row("where", "zero_size")
          .inputs({In::bools({0, 2}), In::randn({2}), In::randn({0, 1})})
          .call([](const Tensors& x) { return where(x[0], x[1], x[2]); })
          .ref(ternary_ref(select3)),

      // ---- masked_fill ----
      Row("masked_fill", "broadcast_scalar")
          .inputs({In::randn({2, 3}), In::bools({3})})
          .call([](const Tensors& x) { return masked_fill(x[0], x[1], -1.5); })
          .ref([=](const Tensors& x) {
            return ternary_ref(select3)({x[1], full({}, -1.5, kFloat64), x[0]});
          })
          .dtypes(all_float)
          .bad("uint8 mask", [] { masked_fill(zeros({2}), zeros({2}, kUInt8), 1.0); })
          .bad("1-d value tensor", [] { masked_fill(zeros({2}), zeros({2}, kBool), zeros({1})); })
          .bad("non-broadcastable", [] { masked_fill(zeros({2}), zeros({3}, kBool), 1.0); }),
      Row("masked_fill", "tensor_value_strided")
          .inputs({In::randn({3, 2}).strided(), In::bools({3, 2}), In::randn({})})
          .call([](const Tensors& x) { return masked_fill(x[0], x[1], x[2]); })
          .ref([=](const Tensors& x) {
            return ternary_ref(select3)({x[1], x[2], x[0]});
          }),
      Row("masked_fill", "mask_broadcasts_x")
          .inputs({In::randn({3}), In::bools({2, 3})})
          .call([](const Tensors& x) { return masked_fill(x[0], x[1], 2.0); })
          .ref([=](const Tensors& x) {
            return ternary_ref(select3)({x[1], full({}, 2.0, kFloat64), x[0]});
          }),
      Row("masked_fill", "ints")
          .inputs({In::ints({5}, -9, 9), In::bools({5})})
          .call([](const Tensors& x) { return masked_fill(x[0], x[1], 7); })
          .ref([=](const Tensors& x) {
            return ternary_ref(select3)({x[1], full({}, 7.0, kFloat64), x[0]});
          })
          .exact(),

      // ---- masked_select / masked_scatter ----
      Row("masked_select")
          .inputs({In::randn({2, 3}).strided(), In::bools({2, 3})})
          .call([](const Tensors& x) { return masked_select(x[0], x[1]); })
          .ref([](const Tensors& x) { return masked_select_ref(x[0], x[1]); })
          .dtypes(all_float)
          .bad("uint8 mask", [] { masked_select(zeros({2}), zeros({2}, kUInt8)); })
          .bad("non-broadcastable", [] { masked_select(zeros({2}), zeros({3}, kBool)); }),
      Row("masked_select", "broadcast")
          .inputs({In::randn({3}), In::bools({2, 1})})
          .call([](const Tensors& x) { return masked_select(x[0], x[1]); })
          .ref([](const Tensors& x) { return masked_select_ref(x[0], x[1]); }),
      Row("masked_scatter")
          .inputs({In::randn({2, 3}), In::bools({2, 3}), In::randn({2, 4})})
          .call([](const Tensors& x) { return masked_scatter(x[0], x[1], x[2]); })
          .ref([](const Tensors& x) {
            std::vector<double> out = values(x[0]), m = values(x[1]), src = values(x[2]);
            std::size_t r = 0;
            for (std::size_t k = 0; k < out.size(); ++k) {
              if (m[k] != 0) out[k] = src[r++];
            }
            return make_f64(x[0].shape(), out);
          })
          .dtypes(all_float)
          .bad("source too small", [] { masked_scatter(zeros({3}), ones({3}, kBool), zeros({2})); })
          .bad("dtype mismatch",
               [] { masked_scatter(zeros({3}), ones({3}, kBool), zeros({3}, kFloat64)); }),

      // ---- nonzero ----
      Row("nonzero")
          .inputs({In::fixed({2, 3}, {0, 1, 0, 2.5, 0, -1})})
          .call([](const Tensors& x) { return nonzero(x[0]); })
          .ref([](const Tensors&) {
            return make_f64({3, 2}, {0, 1, 1, 0, 1, 2});
          })
          .dtypes({kFloat32, kFloat64, kBFloat16, kFloat16})
          .exact(),
      Row("nonzero", "zero_dim")
          .inputs({In::fixed({}, {3})})
          .call([](const Tensors& x) { return nonzero(x[0]); })
          .ref([](const Tensors&) {
            return zeros({1, 0}, kFloat64);
          }),
      Row("nonzero", "bools_strided")
          .inputs({In::bools({3, 4}).strided()})
          .call([](const Tensors& x) { return nonzero(x[0]); })
          .ref([](const Tensors& x) {
            std::vector<double> v = values(x[0]), out;
            for (int64_t k = 0; k < 12; ++k) {
              if (v[k] != 0) {
                out.push_back(double(k / 4));
                out.push_back(double(k % 4));
              }
            }
            return make_f64({static_cast<int64_t>(out.size() / 2), 2}, out);
          })
          .exact(),
      Row("nonzero", "empty")
          .inputs({In::randn({0, 3})})
          .call([](const Tensors& x) { return nonzero(x[0]); })
          .ref([](const Tensors&) {
            return zeros({0, 2}, kFloat64);
          }),
  };
}

}  // namespace ath::testing
