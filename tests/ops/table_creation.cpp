// Op-table rows: the deterministic factory ops (arange, linspace, eye).
#include "support/op_table.h"
#include "support/reference.h"

namespace ath::testing {

namespace {

Tensor seq_ref(int64_t n, const std::function<double(int64_t)>& f) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(f(i));
  return make_f64({n}, v);
}

}  // namespace

ATH_OP_ROWS(creation) {
  return {
      Row("arange", "ints")
          .call([](const Tensors&) { return arange(0, 10, 3); })
          .ref([](const Tensors&) {
            return make_f64({4}, {0, 3, 6, 9});
          })
          .exact()
          .bad("zero step", [] { arange(0, 10, 0); })
          .bad("step sign", [] { arange(0, 10, -1); })
          .bad("non-finite end", [] { arange(0.0, INFINITY, 1.0); })
          .bad("bool dtype", [] { arange(0, 3, 1, kBool); })
          .bad("too many elements", [] { arange(int64_t{0}, int64_t{1} << 60); }),
      Row("arange", "floats")
          .call([](const Tensors&) { return arange(0, 1, 0.1); })
          .ref([](const Tensors&) { return seq_ref(10, [](int64_t i) { return 0.1 * i; }); }),
      Row("arange", "negative_step_end_only")
          .call([](const Tensors&) {
            return cat({arange(10, 0, -3), arange(3)});
          })
          .ref([](const Tensors&) {
            return make_f64({7}, {10, 7, 4, 1, 0, 1, 2});
          })
          .exact(),
      Row("arange", "empty_f64")
          .call([](const Tensors&) { return arange(2, 2, 1, kFloat64); })
          .ref([](const Tensors&) { return zeros({0}, kFloat64); }),
      Row("linspace")
          .call([](const Tensors&) { return linspace(-1, 1, 5); })
          .ref([](const Tensors&) {
            return make_f64({5}, {-1, -0.5, 0, 0.5, 1});
          })
          .bad("negative steps", [] { linspace(0, 1, -1); }),
      Row("linspace", "one_and_int")
          .call([](const Tensors&) {
            return cat({linspace(3, 7, 1, kFloat64), linspace(0, 10, 4, kInt64).to(kFloat64)});
          })
          .ref([](const Tensors&) {
            return make_f64({5}, {3, 0, 3, 6, 10});
          })
          .exact(),
      Row("eye")
          .call([](const Tensors&) { return eye(3); })
          .ref([](const Tensors&) {
            return make_f64({3, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1});
          })
          .exact()
          .bad("negative n", [] { eye(-1); })
          .bad("negative m", [] { eye(2, -2); }),
      Row("eye", "rect_bool")
          .call([](const Tensors&) { return eye(2, 3, kBool); })
          .ref([](const Tensors&) {
            return make_f64({2, 3}, {1, 0, 0, 0, 1, 0});
          })
          .exact(),
  };
}

}  // namespace ath::testing
