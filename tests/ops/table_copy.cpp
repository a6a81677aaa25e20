// Op-table rows: to_dtype, clone, copy.
#include "support/op_table.h"
#include "support/reference.h"

namespace ath::testing {

namespace {

// x (contiguous) permuted by dims, then made contiguous: element idx of the result is
// x[idx mapped back through dims].
Tensor permuted_ref(const Tensor& x, const std::vector<int64_t>& dims) {
  Shape out_shape;
  for (int64_t d : dims) out_shape.push_back(x.shape()[d]);
  std::vector<double> xv = values(x), out(xv.size());
  const Strides xs = contiguous_strides(x.shape());
  for (int64_t k = 0; k < static_cast<int64_t>(out.size()); ++k) {
    std::vector<int64_t> idx = unravel(k, out_shape);
    int64_t src = 0;
    for (std::size_t i = 0; i < dims.size(); ++i) src += idx[i] * xs[dims[i]];
    out[k] = xv[src];
  }
  return make_f64(out_shape, out);
}

}  // namespace

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
      // Transposing copies (the tiled path): partial tiles, batch dims on both sides of the
      // transposed pair, and a converting one.
      Row("clone", "transposed_partial_tiles")
          .inputs({In::randn({45, 70})})
          .call([](const Tensors& x) { return x[0].t().clone(); })
          .ref([](const Tensors& x) {
            return permuted_ref(x[0], {1, 0});
          })
          .dtypes({kFloat32, kFloat64, kBFloat16, kFloat16}),
      Row("clone", "permuted_batched")
          .inputs({In::randn({3, 5, 2, 37})})
          .call([](const Tensors& x) {
            return x[0].permute({2, 3, 0, 1}).contiguous();
          })
          .ref([](const Tensors& x) {
            return permuted_ref(x[0], {2, 3, 0, 1});
          }),
      Row("clone", "transposed_int32_exact")
          .inputs({In::ints({9, 13}, -100, 100, kInt32)})
          .call([](const Tensors& x) { return x[0].t().clone(); })
          .ref([](const Tensors& x) {
            return permuted_ref(x[0], {1, 0});
          })
          .exact(),
      Row("clone", "transposed_bool")
          .inputs({In::bools({6, 5})})
          .call([](const Tensors& x) { return x[0].t().clone(); })
          .ref([](const Tensors& x) {
            return permuted_ref(x[0], {1, 0});
          })
          .exact(),
      Row("to_dtype", "transposed_f32_to_f64")
          .inputs({In::randn({2, 33, 40})})
          .call([](const Tensors& x) { return x[0].transpose(1, 2).to(kFloat64); })
          .ref([](const Tensors& x) {
            return permuted_ref(x[0], {0, 2, 1});
          }),
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
  };
}

}  // namespace ath::testing
