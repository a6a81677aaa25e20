// Op-table rows: layer_norm and layer_norm_backward.
#include "ops/nn_reference.h"
#include "support/op_table.h"
#include "support/reference.h"

namespace ath::testing {

namespace {

constexpr double kEps = 1e-5;

// inputs: x [, w [, b]]
RefFn forward_ref(Shape ns, bool has_w, bool has_b) {
  return [=](const Tensors& x) {
    return norm_forward_ref(x[0], has_w ? x[1] : Tensor(), has_b ? x[has_w ? 2 : 1] : Tensor(),
                            layer_norm_map(x[0].shape(), ns), kEps);
  };
}

// The backward op on (g, x [, w]), with mean/rstd from the forward op so gradients flow
// through them too; returns output `which` (0 dx, 1 dweight, 2 dbias).
OpFn backward_call(Shape ns, bool has_w, int which) {
  return [=](const Tensors& x) {
    Tensor absent = empty({0});
    Tensor fin[3] = {x[1], has_w ? x[2] : absent, absent};
    Outputs f = call(op_layer_norm(), TensorSpan(fin),
                     LayerNormAttrs{.normalized_shape = ns, .eps = kEps, .has_weight = has_w});
    Tensor bin[5] = {x[0], x[1], f[1], f[2], has_w ? x[2] : absent};
    Outputs b = call(op_layer_norm_backward(), TensorSpan(bin),
                     LayerNormBackwardAttrs{.normalized_shape = ns, .has_weight = has_w});
    return b[static_cast<std::size_t>(which)];
  };
}

RefFn backward_ref(Shape ns, bool has_w, int which) {
  return [=](const Tensors& x) {
    NormGrads r = norm_backward_ref(x[0], x[1], has_w ? x[2] : Tensor(),
                                    layer_norm_map(x[1].shape(), ns), kEps);
    if (which == 0) return r.dx;
    return make_f64(ns, values(which == 1 ? r.dw : r.db));
  };
}

}  // namespace

ATH_OP_ROWS(layer_norm) {
  return {
      Row("layer_norm", "affine")
          .inputs({In::randn({3, 4, 5}), In::randn({5}), In::randn({5})})
          .call([](const Tensors& x) { return layer_norm(x[0], {5}, x[1], x[2]); })
          .ref(forward_ref({5}, true, true))
          .dtypes({kFloat32, kFloat64, kBFloat16})
          .bad("normalized_shape doesn't match the input",
               [] {
                 layer_norm(zeros({2, 3}), {4});
               })
          .bad("normalized_shape longer than the input",
               [] {
                 layer_norm(zeros({3}), {2, 3});
               })
          .bad("empty normalized_shape",
               [] {
                 layer_norm(zeros({2, 3}), {});
               })
          .bad("weight shape",
               [] {
                 layer_norm(zeros({2, 3}), {3}, zeros({2}));
               })
          .bad("bias shape",
               [] {
                 layer_norm(zeros({2, 3}), {3}, zeros({3}), zeros({3, 1}));
               })
          .bad("integer input",
               [] {
                 layer_norm(zeros({2, 3}, kInt64), {3});
               }),
      Row("layer_norm", "two_dims_strided")
          .inputs({In::randn({2, 3, 4}).strided(), In::randn({3, 4}).strided(), In::randn({3, 4})})
          .call([](const Tensors& x) {
            return layer_norm(x[0], {3, 4}, x[1], x[2]);
          })
          .ref(forward_ref({3, 4}, true, true))
          .dtypes({kFloat32, kFloat64, kBFloat16}),
      Row("layer_norm", "no_affine")
          .inputs({In::randn({4, 6})})
          .call([](const Tensors& x) { return layer_norm(x[0], {6}); })
          .ref(forward_ref({6}, false, false)),
      Row("layer_norm", "weight_only_wide_row")
          .inputs({In::randn({2, 40}), In::randn({40})})
          .call([](const Tensors& x) { return layer_norm(x[0], {40}, x[1]); })
          .ref(forward_ref({40}, true, false)),
      Row("layer_norm", "bias_only")
          .inputs({In::randn({3, 4}), In::randn({4})})
          .call([](const Tensors& x) { return layer_norm(x[0], {4}, {}, x[1]); })
          .ref(forward_ref({4}, false, true)),
      // |mean| / std ~ 3500: float32 keeps ~3 digits of x - mean (mean itself rounds to
      // 3e-5), as in torch; the statistics themselves must not lose more.
      Row("layer_norm", "large_mean")
          .inputs({In::uniform({3, 8}, 1000, 1001)})
          .call([](const Tensors& x) { return layer_norm(x[0], {8}); })
          .ref(forward_ref({8}, false, false))
          .tol(1e-3, 5e-4)
          .dtypes({kFloat32, kFloat64})
          .grad_tol(1e-2, 1e-3),
      Row("layer_norm", "zero_batch")
          .inputs({In::randn({0, 4}), In::randn({4}), In::randn({4})})
          .call([](const Tensors& x) { return layer_norm(x[0], {4}, x[1], x[2]); })
          .ref(forward_ref({4}, true, true)),
      Row("layer_norm_backward", "dx")
          .inputs({In::randn({3, 5}), In::randn({3, 5}), In::randn({5})})
          .call(backward_call({5}, true, 0))
          .ref(backward_ref({5}, true, 0))
          .dtypes({kFloat32, kFloat64, kBFloat16})
          .tol(1e-4, 1e-5)
          .bad("grad shape",
               [] {
                 Tensor in[5] = {zeros({2, 4}), zeros({2, 3}), zeros({2, 1}), zeros({2, 1}),
                                 zeros({3})};
                 call(op_layer_norm_backward(), TensorSpan(in),
                      LayerNormBackwardAttrs{.normalized_shape = {3}, .has_weight = true});
               })
          .bad("rstd size",
               [] {
                 Tensor in[5] = {zeros({2, 3}), zeros({2, 3}), zeros({2, 1}), zeros({3, 1}),
                                 zeros({3})};
                 call(op_layer_norm_backward(), TensorSpan(in),
                      LayerNormBackwardAttrs{.normalized_shape = {3}, .has_weight = true});
               }),
      Row("layer_norm_backward", "dx_no_weight_strided")
          .inputs({In::randn({2, 3, 4}).strided(), In::randn({2, 3, 4})})
          .call(backward_call({3, 4}, false, 0))
          .ref(backward_ref({3, 4}, false, 0))
          .tol(1e-4, 1e-5),
      Row("layer_norm_backward", "dweight")
          .inputs({In::randn({3, 5}), In::randn({3, 5}), In::randn({5})})
          .call(backward_call({5}, true, 1))
          .ref(backward_ref({5}, true, 1))
          .tol(1e-4, 1e-5),
      // The fused form: dx + addend (inputs g, x, w, addend); its other outputs are the
      // backward's own.
      Row("layer_norm_backward_add")
          .inputs({In::randn({3, 5}), In::randn({3, 5}), In::randn({5}), In::randn({3, 5})})
          .call([](const Tensors& x) {
            Tensor absent = empty({0});
            Tensor fin[3] = {x[1], x[2], absent};
            Outputs f =
                call(op_layer_norm(), TensorSpan(fin),
                     LayerNormAttrs{.normalized_shape = {5}, .eps = kEps, .has_weight = true});
            Tensor bin[6] = {x[0], x[1], f[1], f[2], x[2], x[3]};
            return call(op_layer_norm_backward_add(), TensorSpan(bin),
                        LayerNormBackwardAttrs{.normalized_shape = {5}, .has_weight = true})[0];
          })
          .ref([](const Tensors& x) {
            return backward_ref({5}, true, 0)({x[0], x[1], x[2]}) + x[3];
          })
          .dtypes({kFloat32, kFloat64, kBFloat16})
          .tol(1e-4, 1e-5)
          .no_gradcheck()
          .bad("addend shape",
               [] {
                 Tensor in[6] = {zeros({2, 3}), zeros({2, 3}), zeros({2, 1}),
                                 zeros({2, 1}), zeros({3}),    zeros({2, 4})};
                 call(op_layer_norm_backward_add(), TensorSpan(in),
                      LayerNormBackwardAttrs{.normalized_shape = {3}, .has_weight = true});
               }),
      Row("layer_norm_backward", "dbias")
          .inputs({In::randn({3, 5}), In::randn({3, 5}), In::randn({5})})
          .call(backward_call({5}, true, 2))
          .ref(backward_ref({5}, true, 2)),
  };
}

}  // namespace ath::testing
