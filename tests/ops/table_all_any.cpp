// Op-table rows: all, any.
#include "ops/reduction_refs.h"

namespace ath::testing {

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();

double ref_all(const Group& g) {
  return std::all_of(g.begin(), g.end(), [](double v) { return v != 0; });
}
double ref_any(const Group& g) {
  return std::any_of(g.begin(), g.end(), [](double v) { return v != 0; });
}
}  // namespace

ATH_OP_ROWS(all_any) {
  return {
      Row("all", "float")
          .inputs({In::fixed({3, 3}, {1, 2, 3, 0, 1, 1, kNaN, -1, 0.5}).no_grad()})
          .call([](const Tensors& x) { return all(x[0], {1}); })
          .ref(group({1}, false, ref_all))
          .dtypes({kFloat32, kFloat64, kBFloat16})
          .exact()
          .bad("dim out of range", [] { all(zeros({2}), {1}); }),
      Row("all", "int_all_dims")
          .inputs({In::ints({3, 4}, 0, 2)})
          .call([](const Tensors& x) { return all(x[0]); })
          .ref(group({}, false, ref_all))
          .exact(),
      Row("all", "bool_keepdim")
          .inputs({In::bools({4, 5})})
          .call([](const Tensors& x) { return all(x[0], {0}, true); })
          .ref(group({0}, true, ref_all))
          .exact(),
      Row("all", "uint8_strided")
          .inputs({In::ints({3, 4}, 0, 3, kUInt8).strided()})
          .call([](const Tensors& x) { return all(x[0], {-1}); })
          .ref(group({1}, false, ref_all))
          .exact(),
      Row("all", "zero_size")  // true over nothing
          .inputs({In::bools({0, 3})})
          .call([](const Tensors& x) { return all(x[0], {0}); })
          .ref(group({0}, false, ref_all))
          .exact(),
      Row("all", "zero_dim")
          .inputs({In::ints({}, 0, 2)})
          .call([](const Tensors& x) { return all(x[0]); })
          .ref(group({}, false, ref_all))
          .exact(),
      Row("any", "float")
          .inputs({In::fixed({3, 3}, {0, 0, 0, 0, 1, 0, kNaN, 0, 0}).no_grad()})
          .call([](const Tensors& x) { return any(x[0], {1}); })
          .ref(group({1}, false, ref_any))
          .exact(),
      Row("any", "outer")
          .inputs({In::ints({40, 3}, 0, 2).as(kBool)})
          .call([](const Tensors& x) { return any(x[0], {0}); })
          .ref(group({0}, false, ref_any))
          .exact(),
      Row("any", "zero_size")  // false over nothing
          .inputs({In::ints({0, 3}, 0, 2, kInt32)})
          .call([](const Tensors& x) { return any(x[0], {0}, true); })
          .ref(group({0}, true, ref_any))
          .exact(),
  };
}

}  // namespace ath::testing
