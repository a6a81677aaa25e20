// Op-table rows: batch_norm and batch_norm_backward (the running-stat update has its own test in
// test_nn_functional.cpp).
#include "ops/nn_reference.h"
#include "support/op_table.h"
#include "support/reference.h"

namespace ath::testing {

namespace {

constexpr double kEps = 1e-5;

NormStats running_stats(const Tensor& rm, const Tensor& rv) { return {values(rm), values(rv), {}}; }

// Inputs x, running_mean, running_var, weight, bias; the running stats are cloned so repeated
// calls (dtypes, gradcheck) see the same buffers.
OpFn forward_call(bool training) {
  return [=](const Tensors& x) {
    Tensor rm = x[1].clone(), rv = x[2].clone();
    return batch_norm(x[0], rm, rv, x[3], x[4], training, 0.1, kEps);
  };
}

RefFn forward_ref(bool training) {
  return [=](const Tensors& x) {
    NormStats st = running_stats(x[1], x[2]);
    return norm_forward_ref(x[0], x[3], x[4], batch_norm_map(x[0].shape()), kEps,
                            training ? nullptr : &st);
  };
}

// The backward op on (g, x, running_mean, running_var, weight), mean/rstd from the forward op;
// returns output `which` (0 dx, 1 dweight, 2 dbias).
OpFn backward_call(bool training, int which) {
  return [=](const Tensors& x) {
    Tensor absent = empty({0});
    Tensor fin[5] = {x[1], x[2].clone(), x[3].clone(), x[4], absent};
    Outputs f = call(
        op_batch_norm(), TensorSpan(fin),
        BatchNormAttrs{.training = training, .eps = kEps, .has_running = true, .has_weight = true});
    Tensor bin[5] = {x[0], x[1], f[1], f[2], x[4]};
    Outputs b = call(op_batch_norm_backward(), TensorSpan(bin),
                     BatchNormBackwardAttrs{.training = training, .has_weight = true});
    return b[static_cast<std::size_t>(which)];
  };
}

RefFn backward_ref(bool training, int which) {
  return [=](const Tensors& x) {
    NormStats st = running_stats(x[2], x[3]);
    NormGrads r = norm_backward_ref(x[0], x[1], x[4], batch_norm_map(x[1].shape()), kEps,
                                    training ? nullptr : &st);
    return which == 0 ? r.dx : which == 1 ? r.dw : r.db;
  };
}

std::vector<In> bn_inputs(Shape x, int64_t c, bool strided = false) {
  In xi = In::randn(x);
  return {strided ? xi.strided() : xi, In::randn({c}).no_grad(), In::positive({c}).no_grad(),
          In::randn({c}), In::randn({c})};
}

std::vector<In> bn_backward_inputs(Shape x, int64_t c) {
  return {In::randn(x), In::randn(x), In::randn({c}).no_grad(), In::positive({c}).no_grad(),
          In::randn({c})};
}

}  // namespace

ATH_OP_ROWS(batch_norm) {
  return {
      Row("batch_norm", "train_4d")
          .inputs(bn_inputs({3, 2, 2, 3}, 2))
          .call(forward_call(true))
          .ref(forward_ref(true))
          .dtypes({kFloat32, kFloat64, kBFloat16})
          .bad("weight channel mismatch",
               [] {
                 batch_norm(zeros({2, 3}), {}, {}, zeros({4}), {}, true);
               })
          .bad("running_mean channel mismatch",
               [] {
                 batch_norm(zeros({2, 3, 2}), zeros({2}), ones({2}), {}, {}, false);
               })
          .bad("running_var shape",
               [] {
                 batch_norm(zeros({2, 3}), zeros({3}), ones({3, 1}), {}, {}, true);
               })
          .bad("1-D input", [] { batch_norm(zeros({3}), {}, {}, {}, {}, true); })
          .bad("one value per channel when training",
               [] {
                 batch_norm(zeros({1, 3}), {}, {}, {}, {}, true);
               })
          .bad("eval without running stats",
               [] {
                 batch_norm(zeros({2, 3}), {}, {}, {}, {}, false);
               })
          .bad("only running_mean",
               [] {
                 batch_norm(zeros({2, 3}), zeros({3}), {}, {}, {});
               }),
      Row("batch_norm", "train_3d")
          .inputs(bn_inputs({2, 3, 4}, 3))
          .call(forward_call(true))
          .ref(forward_ref(true))
          .dtypes({kFloat32, kFloat64, kBFloat16}),
      Row("batch_norm", "train_2d_strided")
          .inputs(bn_inputs({5, 3}, 3, /*strided=*/true))
          .call(forward_call(true))
          .ref(forward_ref(true)),
      Row("batch_norm", "train_no_affine_no_running")
          .inputs({In::randn({4, 2, 3})})
          .call([](const Tensors& x) { return batch_norm(x[0], {}, {}, {}, {}, true); })
          .ref([](const Tensors& x) {
            return norm_forward_ref(x[0], {}, {}, batch_norm_map(x[0].shape()), kEps);
          }),
      Row("batch_norm", "eval_3d")
          .inputs(bn_inputs({2, 3, 4}, 3))
          .call(forward_call(false))
          .ref(forward_ref(false))
          .dtypes({kFloat32, kFloat64, kBFloat16}),
      Row("batch_norm", "eval_4d_strided")
          .inputs(bn_inputs({2, 2, 3, 2}, 2, /*strided=*/true))
          .call(forward_call(false))
          .ref(forward_ref(false)),
      Row("batch_norm", "train_zero_batch")
          .inputs(bn_inputs({0, 3}, 3))
          .call(forward_call(true))
          .ref([](const Tensors& x) { return make_f64(x[0].shape(), {}); }),
      Row("batch_norm_backward", "train_dx")
          .inputs(bn_backward_inputs({3, 2, 4}, 2))
          .call(backward_call(true, 0))
          .ref(backward_ref(true, 0))
          .dtypes({kFloat32, kFloat64, kBFloat16})
          .tol(1e-4, 1e-5)
          .bad("channel mismatch",
               [] {
                 Tensor in[5] = {zeros({2, 3}), zeros({2, 3}), zeros({2}), zeros({2}), zeros({3})};
                 call(op_batch_norm_backward(), TensorSpan(in),
                      BatchNormBackwardAttrs{.training = true, .has_weight = true});
               }),
      Row("batch_norm_backward", "train_dweight")
          .inputs(bn_backward_inputs({3, 2, 4}, 2))
          .call(backward_call(true, 1))
          .ref(backward_ref(true, 1))
          .tol(1e-4, 1e-5),
      Row("batch_norm_backward", "train_dbias")
          .inputs(bn_backward_inputs({4, 3}, 3))
          .call(backward_call(true, 2))
          .ref(backward_ref(true, 2)),
      Row("batch_norm_backward", "eval_dx")
          .inputs(bn_backward_inputs({2, 3, 2, 2}, 3))
          .call(backward_call(false, 0))
          .ref(backward_ref(false, 0))
          .dtypes({kFloat32, kFloat64, kBFloat16}),
      Row("batch_norm_backward", "eval_dweight")
          .inputs(bn_backward_inputs({2, 3, 2}, 3))
          .call(backward_call(false, 1))
          .ref(backward_ref(false, 1))
          .tol(1e-4, 1e-5),
  };
}

}  // namespace ath::testing
