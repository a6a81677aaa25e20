// Op-table rows: prod.
#include "ops/reduction_refs.h"

namespace ath::testing {

namespace {
double ref_prod(const Group& g) {
  double p = 1;
  for (double v : g) p *= v;
  return p;
}
}  // namespace

ATH_OP_ROWS(prod) {
  return {
      Row("prod", "all")
          .inputs({In::uniform({3, 4}, 0.5, 1.5)})
          .call([](const Tensors& x) { return prod(x[0]); })
          .ref(group({}, false, ref_prod))
          .dtypes({kFloat32, kFloat64, kBFloat16})
          .bad("dim out of range",
               [] {
                 prod(zeros({2, 3}), {-3});
               })
          .bad("repeated dim",
               [] {
                 prod(zeros({2, 3}), {1, 1});
               })
          .bad("bool result", [] { prod(zeros({2}), {}, false, kBool); }),
      Row("prod", "dims_keepdim")
          .inputs({In::uniform({2, 3, 4}, -1.5, 1.5).strided()})
          .call([](const Tensors& x) {
            return prod(x[0], {0, 2}, true);
          })
          .ref(group({0, 2}, true, ref_prod)),
      Row("prod", "neg_dim")
          .inputs({In::uniform({3, 5}, 0.5, 1.5)})
          .call([](const Tensors& x) { return prod(x[0], {-1}); })
          .ref(group({1}, false, ref_prod)),
      Row("prod", "outer")
          .inputs({In::uniform({40, 3}, 0.8, 1.2)})
          .call([](const Tensors& x) { return prod(x[0], {0}); })
          .ref(group({0}, false, ref_prod)),
      // Zeros: one in row 0, two in row 1 — the gradient is the product of the others (no 0/0).
      Row("prod", "zeros_dim")
          .inputs({In::fixed({2, 4}, {1.5, 0, -2, 0.5, 0, 3, 0, 2})})
          .call([](const Tensors& x) { return prod(x[0], {1}); })
          .ref(group({1}, false, ref_prod)),
      Row("prod", "zeros_multi_dim")
          .inputs({In::fixed({2, 2, 3}, {1.5, 0, -2, 0.5, 1.25, 3, -1, 2, 0.75, 1.1, -0.9, 1.3})})
          .call([](const Tensors& x) {
            return prod(x[0], {0, 2}, true);
          })
          .ref(group({0, 2}, true, ref_prod)),
      Row("prod", "zero_all")
          .inputs({In::fixed({3}, {2, 0, 3})})
          .call([](const Tensors& x) { return prod(x[0]); })
          .ref(group({}, false, ref_prod)),
      Row("prod", "zero_size")  // the identity, 1
          .inputs({In::randn({0, 3})})
          .call([](const Tensors& x) { return prod(x[0], {0}); })
          .ref(group({0}, false, ref_prod)),
      Row("prod", "zero_dim")
          .inputs({In::randn({})})
          .call([](const Tensors& x) { return prod(x[0]); })
          .ref(group({}, false, ref_prod)),
      Row("prod", "int")  // int32 gives int64
          .inputs({In::ints({3, 4}, -4, 5, kInt32)})
          .call([](const Tensors& x) {
            Tensor p = prod(x[0], {1});
            if (p.dtype() != kInt64) throw std::runtime_error("prod(int32) is not int64");
            return p;
          })
          .ref(group({1}, false, ref_prod))
          .exact(),
      Row("prod", "dtype")
          .inputs({In::uniform({2, 3}, 0.5, 1.5).no_grad()})
          .call([](const Tensors& x) { return prod(x[0], {0}, false, kFloat64); })
          .ref(group({0}, false, ref_prod)),
  };
}

}  // namespace ath::testing
