// Op-table rows: group_norm and group_norm_backward.
#include "ops/nn_reference.h"
#include "support/op_table.h"
#include "support/reference.h"

namespace ath::testing {

namespace {

constexpr double kEps = 1e-5;

// The backward op on (g, x, weight), mean/rstd from the forward op; output `which`.
OpFn backward_call(int64_t groups, int which) {
  return [=](const Tensors& x) {
    Tensor absent = empty({0});
    Tensor fin[3] = {x[1], x[2], absent};
    Outputs f = call(op_group_norm(), TensorSpan(fin),
                     GroupNormAttrs{.num_groups = groups, .eps = kEps, .has_weight = true});
    Tensor bin[5] = {x[0], x[1], f[1], f[2], x[2]};
    Outputs b = call(op_group_norm_backward(), TensorSpan(bin),
                     GroupNormBackwardAttrs{.num_groups = groups, .has_weight = true});
    return b[static_cast<std::size_t>(which)];
  };
}

RefFn backward_ref(int64_t groups, int which) {
  return [=](const Tensors& x) {
    NormGrads r = norm_backward_ref(x[0], x[1], x[2], group_norm_map(x[1].shape(), groups), kEps);
    return which == 0 ? r.dx : which == 1 ? r.dw : r.db;
  };
}

}  // namespace

ATH_OP_ROWS(group_norm) {
  return {
      Row("group_norm", "affine_4d")
          .inputs({In::randn({2, 6, 2, 2}), In::randn({6}), In::randn({6})})
          .call([](const Tensors& x) { return group_norm(x[0], 3, x[1], x[2]); })
          .ref([](const Tensors& x) {
            return norm_forward_ref(x[0], x[1], x[2], group_norm_map(x[0].shape(), 3), kEps);
          })
          .dtypes({kFloat32, kFloat64, kBFloat16})
          .bad("channels not divisible by num_groups",
               [] {
                 group_norm(zeros({2, 6, 3}), 4);
               })
          .bad("num_groups zero",
               [] {
                 group_norm(zeros({2, 6, 3}), 0);
               })
          .bad("weight channel mismatch",
               [] {
                 group_norm(zeros({2, 6, 3}), 3, zeros({3}));
               })
          .bad("bias channel mismatch",
               [] {
                 group_norm(zeros({2, 6, 3}), 3, zeros({6}), zeros({2}));
               })
          .bad("1-D input", [] { group_norm(zeros({6}), 3); }),
      Row("group_norm", "no_affine_strided")
          .inputs({In::randn({3, 4, 5}).strided()})
          .call([](const Tensors& x) { return group_norm(x[0], 2); })
          .ref([](const Tensors& x) {
            return norm_forward_ref(x[0], {}, {}, group_norm_map(x[0].shape(), 2), kEps);
          })
          .dtypes({kFloat32, kFloat64, kBFloat16}),
      Row("group_norm", "two_dims_one_group")
          .inputs({In::randn({3, 4}), In::randn({4}), In::randn({4})})
          .call([](const Tensors& x) { return group_norm(x[0], 1, x[1], x[2]); })
          .ref([](const Tensors& x) {
            return norm_forward_ref(x[0], x[1], x[2], group_norm_map(x[0].shape(), 1), kEps);
          }),
      Row("group_norm", "instance_norm_like")
          .inputs({In::randn({2, 3, 6}), In::randn({3})})
          .call([](const Tensors& x) { return group_norm(x[0], 3, x[1]); })
          .ref([](const Tensors& x) {
            return norm_forward_ref(x[0], x[1], {}, group_norm_map(x[0].shape(), 3), kEps);
          }),
      Row("group_norm", "zero_batch")
          .inputs({In::randn({0, 4, 2})})
          .call([](const Tensors& x) { return group_norm(x[0], 2); })
          .ref([](const Tensors& x) { return make_f64(x[0].shape(), {}); }),
      Row("group_norm_backward", "dx")
          .inputs({In::randn({2, 4, 3}), In::randn({2, 4, 3}), In::randn({4})})
          .call(backward_call(2, 0))
          .ref(backward_ref(2, 0))
          .dtypes({kFloat32, kFloat64, kBFloat16})
          .tol(1e-4, 1e-5)
          .bad("channels not divisible",
               [] {
                 Tensor in[5] = {zeros({2, 3}), zeros({2, 3}), zeros({2, 2}), zeros({2, 2}),
                                 zeros({3})};
                 call(op_group_norm_backward(), TensorSpan(in),
                      GroupNormBackwardAttrs{.num_groups = 2, .has_weight = true});
               }),
      Row("group_norm_backward", "dx_strided")
          .inputs({In::randn({2, 6, 2}).strided(), In::randn({2, 6, 2}), In::randn({6})})
          .call(backward_call(3, 0))
          .ref(backward_ref(3, 0))
          .tol(1e-4, 1e-5),
      Row("group_norm_backward", "dweight")
          .inputs({In::randn({2, 4, 3}), In::randn({2, 4, 3}), In::randn({4})})
          .call(backward_call(2, 1))
          .ref(backward_ref(2, 1))
          .tol(1e-4, 1e-5),
      Row("group_norm_backward", "dbias")
          .inputs({In::randn({2, 4, 3}), In::randn({2, 4, 3}), In::randn({4})})
          .call(backward_call(2, 2))
          .ref(backward_ref(2, 2)),
  };
}

}  // namespace ath::testing
