// Op-table rows: var, std, logsumexp, norm.
#include "ops/reduction_refs.h"

namespace ath::testing {

namespace {
const double kInf = std::numeric_limits<double>::infinity();

RefFn var_ref(DimList dims, bool keepdim, double c) {
  return group(dims, keepdim, [c](const Group& g) { return ref_var(g, c); });
}
RefFn std_ref(DimList dims, bool keepdim, double c) {
  return group(dims, keepdim, [c](const Group& g) { return std::sqrt(ref_var(g, c)); });
}
RefFn lse_ref(DimList dims, bool keepdim) { return group(dims, keepdim, ref_logsumexp); }
RefFn norm_ref(double p, DimList dims, bool keepdim) {
  return group(dims, keepdim, [p](const Group& g) { return ref_norm(g, p); });
}
}  // namespace

ATH_OP_ROWS(statistics) {
  return {
      Row("var", "all")
          .inputs({In::randn({3, 4})})
          .call([](const Tensors& x) { return var(x[0]); })
          .ref(var_ref({}, false, 1))
          .dtypes({kFloat32, kFloat64, kBFloat16})
          .bad("integer input", [] { var(zeros({3}, kInt64)); })
          .bad("dim out of range", [] { var(zeros({3}), {1}); })
          .bad("repeated dim",
               [] {
                 var(zeros({3, 2}), {0, 0});
               }),
      Row("var", "dims_keepdim_population")
          .inputs({In::randn({2, 3, 4}).strided()})
          .call([](const Tensors& x) {
            return var(x[0], {0, 2}, 0, true);
          })
          .ref(var_ref({0, 2}, true, 0)),
      Row("var", "neg_dim")
          .inputs({In::randn({3, 5})})
          .call([](const Tensors& x) { return var(x[0], {-1}); })
          .ref(var_ref({1}, false, 1)),
      Row("var", "outer")
          .inputs({In::randn({40, 3})})
          .call([](const Tensors& x) { return var(x[0], {0}, 2); })
          .ref(var_ref({0}, false, 2)),
      Row("var", "correction_ge_n")  // divides by max(0, N - correction) = 0: inf, like PyTorch
          .inputs({In::randn({2, 3})})
          .call([](const Tensors& x) { return var(x[0], {1}, 3); })
          .ref(var_ref({1}, false, 3))
          .no_gradcheck(),
      Row("var", "single_element")  // 0 / 0: nan
          .inputs({In::randn({3, 1})})
          .call([](const Tensors& x) { return var(x[0], {1}); })
          .ref(var_ref({1}, false, 1))
          .no_gradcheck(),
      Row("var", "zero_dim")
          .inputs({In::randn({})})
          .call([](const Tensors& x) { return var(x[0], {}, 0); })
          .ref(var_ref({}, false, 0)),
      Row("var", "zero_size")
          .inputs({In::randn({0, 3})})
          .call([](const Tensors& x) { return var(x[0], {0}); })
          .ref(var_ref({0}, false, 1)),
      Row("std", "all")
          .inputs({In::randn({3, 4})})
          .call([](const Tensors& x) { return std(x[0]); })
          .ref(std_ref({}, false, 1))
          .dtypes({kFloat32, kFloat64, kBFloat16})
          .bad("integer input", [] { std(zeros({3}, kInt32)); }),
      Row("std", "dims_strided")
          .inputs({In::randn({2, 3, 4}).strided()})
          .call([](const Tensors& x) {
            return std(x[0], {1, -1}, 0);
          })
          .ref(std_ref({1, 2}, false, 0)),
      Row("std", "outer_keepdim")
          .inputs({In::randn({30, 4})})
          .call([](const Tensors& x) { return std(x[0], {0}, 1, true); })
          .ref(std_ref({0}, true, 1)),
      Row("std", "constant")  // std 0: the gradient is 0 (masked), as PyTorch
          .inputs({In::fixed({2, 3}, {1, 1, 1, 2, 2, 2})})
          .call([](const Tensors& x) { return std(x[0], {1}); })
          .ref(std_ref({1}, false, 1)),
      Row("std", "correction_ge_n")
          .inputs({In::randn({2, 3})})
          .call([](const Tensors& x) { return std(x[0], {1}, 4); })
          .ref(std_ref({1}, false, 4))
          .no_gradcheck(),

      Row("logsumexp", "all")
          .inputs({In::randn({3, 4})})
          .call([](const Tensors& x) { return logsumexp(x[0]); })
          .ref(lse_ref({}, false))
          .dtypes({kFloat32, kFloat64, kBFloat16})
          .bad("dim out of range", [] { logsumexp(zeros({3}), {1}); }),
      Row("logsumexp", "dims_keepdim")
          .inputs({In::randn({2, 3, 4}).strided()})
          .call([](const Tensors& x) {
            return logsumexp(x[0], {0, 2}, true);
          })
          .ref(lse_ref({0, 2}, true)),
      Row("logsumexp", "neg_dim")
          .inputs({In::randn({3, 5})})
          .call([](const Tensors& x) { return logsumexp(x[0], {-1}); })
          .ref(lse_ref({1}, false)),
      Row("logsumexp", "outer")
          .inputs({In::randn({40, 3})})
          .call([](const Tensors& x) { return logsumexp(x[0], {0}); })
          .ref(lse_ref({0}, false)),
      Row("logsumexp", "large")  // exp(1000) overflows: the max shift keeps it finite
          .inputs({In::fixed({2, 3}, {1000, 1001, 999, -1000, -1001, -999})})
          .call([](const Tensors& x) { return logsumexp(x[0], {1}); })
          .ref(lse_ref({1}, false))
          .dtypes({kFloat32, kFloat64}),
      Row("logsumexp", "infinities")  // all -inf: -inf; any +inf: +inf
          .inputs({In::fixed({3, 2}, {-kInf, -kInf, kInf, 0, kInf, -kInf})})
          .call([](const Tensors& x) { return logsumexp(x[0], {1}); })
          .ref(lse_ref({1}, false))
          .no_gradcheck(),
      Row("logsumexp", "int")  // computes in float32, as PyTorch 1.13
          .inputs({In::ints({3, 4}, -5, 5)})
          .call([](const Tensors& x) { return logsumexp(x[0], {1}); })
          .ref(lse_ref({1}, false)),
      Row("logsumexp", "zero_size")
          .inputs({In::randn({0, 3})})
          .call([](const Tensors& x) { return logsumexp(x[0], {0}); })
          .ref(lse_ref({0}, false)),
      Row("logsumexp", "zero_dim")
          .inputs({In::randn({})})
          .call([](const Tensors& x) { return logsumexp(x[0], {-1}); })
          .ref(lse_ref({}, false)),

      Row("norm", "p2_all")
          .inputs({In::randn({3, 4})})
          .call([](const Tensors& x) { return norm(x[0]); })
          .ref(norm_ref(2, {}, false))
          .dtypes({kFloat32, kFloat64, kBFloat16})
          .bad("integer input", [] { norm(zeros({3}, kInt64)); })
          .bad("nan p", [] { norm(zeros({3}), std::nan("")); })
          .bad("inf norm of an empty dim",
               [] {
                 norm(zeros({0, 2}), kInf, {0});
               })
          .bad("dim out of range", [] { norm(zeros({3}), 2, {4}); }),
      Row("norm", "p2_dims_keepdim")
          .inputs({In::randn({2, 3, 4}).strided()})
          .call([](const Tensors& x) {
            return norm(x[0], 2, {0, 2}, true);
          })
          .ref(norm_ref(2, {0, 2}, true)),
      Row("norm", "p2_outer")
          .inputs({In::randn({40, 3})})
          .call([](const Tensors& x) { return norm(x[0], 2, {0}); })
          .ref(norm_ref(2, {0}, false)),
      Row("norm", "p2_zero")  // norm 0: the gradient is 0 (masked), as PyTorch
          .inputs({In::fixed({2, 2}, {0, 0, 3, -4})})
          .call([](const Tensors& x) { return norm(x[0], 2, {1}); })
          .ref(norm_ref(2, {1}, false)),
      Row("norm", "p1")
          .inputs({In::randn({3, 5})})
          .call([](const Tensors& x) { return norm(x[0], 1, {-1}); })
          .ref(norm_ref(1, {1}, false))
          .dtypes({kFloat32, kFloat64, kBFloat16}),
      Row("norm", "pinf")
          .inputs({In::randn({3, 5})})
          .call([](const Tensors& x) { return norm(x[0], kInf, {1}); })
          .ref(norm_ref(kInf, {1}, false)),
      Row("norm", "pinf_ties")  // |-3| = |3|: split evenly, with the signs
          .inputs({In::fixed({2, 3}, {1, -3, 3, 2, 0.5, -1})})
          .call([](const Tensors& x) { return norm(x[0], kInf, {1}, true); })
          .ref(norm_ref(kInf, {1}, true)),
      Row("norm", "pneginf")
          .inputs({In::randn({3, 5})})
          .call([](const Tensors& x) { return norm(x[0], -kInf, {0}); })
          .ref(norm_ref(-kInf, {0}, false)),
      Row("norm", "p3")
          .inputs({In::randn({3, 5})})
          .call([](const Tensors& x) { return norm(x[0], 3, {1}); })
          .ref(norm_ref(3, {1}, false)),
      Row("norm", "p_half")
          .inputs({In::uniform({3, 4}, 0.2, 2)})
          .call([](const Tensors& x) { return norm(x[0], 0.5); })
          .ref(norm_ref(0.5, {}, false)),
      Row("norm", "p0")  // counts nonzeros; zero gradient
          .inputs({In::fixed({2, 3}, {0, 1.5, -2, 0, 0, 3})})
          .call([](const Tensors& x) { return norm(x[0], 0, {1}); })
          .ref(norm_ref(0, {1}, false)),
      Row("norm", "zero_size")
          .inputs({In::randn({0, 3})})
          .call([](const Tensors& x) { return norm(x[0], 2, {0}); })
          .ref(norm_ref(2, {0}, false)),
      Row("norm", "zero_dim")
          .inputs({In::randn({})})
          .call([](const Tensors& x) { return norm(x[0], 1); })
          .ref(norm_ref(1, {}, false)),
  };
}

}  // namespace ath::testing
