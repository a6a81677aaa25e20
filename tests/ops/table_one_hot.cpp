// Op-table rows: one_hot.
#include "support/op_table.h"
#include "support/reference.h"

namespace ath::testing {

namespace {

Tensor ids(std::vector<int64_t> v) { return from_vector(v); }

}  // namespace

ATH_OP_ROWS(one_hot) {
  return {
      Row("one_hot")
          .inputs({In::ints({2, 3}, 0, 4)})
          .call([](const Tensors& x) { return one_hot(x[0], 4); })
          .ref([](const Tensors& x) {
            std::vector<double> v = values(x[0]), out(24, 0.0);
            for (std::size_t k = 0; k < 6; ++k) out[k * 4 + static_cast<std::size_t>(v[k])] = 1;
            return make_f64({2, 3, 4}, out);
          })
          .exact()
          .bad("class too large",
               [] {
                 one_hot(ids({0, 3}), 3);
               })
          .bad("negative class",
               [] {
                 one_hot(ids({0, -1}), 3);
               })
          .bad("int32 input",
               [] {
                 one_hot(ids({0, 1}).to(kInt32), 3);
               })
          .bad("empty with inferred classes", [] { one_hot(ids({})); }),
      Row("one_hot", "inferred")
          .inputs({})
          .call([](const Tensors&) {
            return one_hot(ids({0, 3, 1}));
          })
          .ref([](const Tensors&) {
            return make_f64({3, 4}, {1, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0});
          })
          .exact(),
  };
}

}  // namespace ath::testing
