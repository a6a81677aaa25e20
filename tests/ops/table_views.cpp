// Op-table rows: the view ops and view_scatter (their gradient).
#include "support/op_table.h"
#include "support/reference.h"

namespace ath::testing {

namespace {
// A reference for a view: pick elements of x by a function from output index to input index.
RefFn gather_ref(Shape out_shape,
                 std::function<std::vector<int64_t>(const std::vector<int64_t>&)> map) {
  return [=](const Tensors& x) {
    std::vector<double> v = values(x[0]), out;
    for (int64_t k = 0; k < numel(out_shape); ++k) {
      out.push_back(v[static_cast<std::size_t>(ravel(map(unravel(k, out_shape)), x[0].shape()))]);
    }
    return make_f64(out_shape, out);
  };
}
RefFn identity_values(Shape out_shape) {
  return [=](const Tensors& x) { return make_f64(out_shape, values(x[0])); };
}
}  // namespace

ATH_OP_ROWS(views) {
  return {
      Row("view")
          .inputs({In::randn({2, 6})})
          .call([](const Tensors& x) {
            return x[0].view({3, -1});
          })
          .ref(identity_values({3, 4}))
          .bad("incompatible numel",
               [] {
                 zeros({2, 3}).view({4});
               })
          .bad("two -1",
               [] {
                 zeros({2, 3}).view({-1, -1});
               })
          .bad("non-viewable strides",
               [] {
                 zeros({2, 3}).t().view({6});
               }),
      Row("view", "reshape_copy")
          .inputs({In::randn({3, 4}).strided()})
          .call([](const Tensors& x) { return x[0].t().reshape({-1}); })
          .ref([](const Tensors& x) { return make_f64({12}, values(x[0].t())); }),
      Row("view", "squeeze_unsqueeze_flatten")
          .inputs({In::randn({2, 1, 3})})
          .call([](const Tensors& x) { return x[0].squeeze(1).unsqueeze(0).flatten(); })
          .ref(identity_values({6})),
      Row("permute")
          .inputs({In::randn({2, 3, 4})})
          .call([](const Tensors& x) {
            return x[0].permute({2, 0, 1});
          })
          .ref(gather_ref({4, 2, 3},
                          [](const std::vector<int64_t>& i) {
                            return std::vector<int64_t>{i[1], i[2], i[0]};
                          }))
          .bad("wrong number of dims",
               [] {
                 zeros({2, 3}).permute({0});
               })
          .bad("repeated dim",
               [] {
                 zeros({2, 3}).permute({0, 0});
               }),
      Row("permute", "transpose")
          .inputs({In::randn({3, 4}).strided()})
          .call([](const Tensors& x) { return x[0].transpose(0, 1); })
          .ref(gather_ref({4, 3},
                          [](const std::vector<int64_t>& i) {
                            return std::vector<int64_t>{i[1], i[0]};
                          })),
      Row("slice", "step")
          .inputs({In::randn({3, 7})})
          .call([](const Tensors& x) { return x[0].slice(1, 1, 6, 2); })
          .ref(gather_ref({3, 3},
                          [](const std::vector<int64_t>& i) {
                            return std::vector<int64_t>{i[0], 1 + 2 * i[1]};
                          }))
          .bad("zero step", [] { zeros({3}).slice(0, 0, 2, 0); })
          .bad("dim out of range", [] { zeros({3}).slice(1, 0, 2); }),
      Row("slice", "narrow")
          .inputs({In::randn({5, 2})})
          .call([](const Tensors& x) { return x[0].narrow(0, 1, 3); })
          .ref(gather_ref({3, 2},
                          [](const std::vector<int64_t>& i) {
                            return std::vector<int64_t>{i[0] + 1, i[1]};
                          }))
          .bad("past the end", [] { zeros({5}).narrow(0, 3, 3); }),
      Row("select")
          .inputs({In::randn({3, 4})})
          .call([](const Tensors& x) { return x[0].select(1, -1); })
          .ref(gather_ref({3},
                          [](const std::vector<int64_t>& i) {
                            return std::vector<int64_t>{i[0], 3};
                          }))
          .bad("index out of range",
               [] {
                 zeros({3, 4}).select(0, 3);
               }),
      Row("expand")
          .inputs({In::randn({3, 1})})
          .call([](const Tensors& x) {
            return x[0].expand({2, 3, 4});
          })
          .ref(gather_ref({2, 3, 4},
                          [](const std::vector<int64_t>& i) {
                            return std::vector<int64_t>{i[1], 0};
                          }))
          .bad("non-singleton mismatch",
               [] {
                 zeros({3, 2}).expand({3, 4});
               }),
      Row("as_strided")
          .inputs({In::randn({3, 4})})
          .call([](const Tensors& x) {
            return x[0].contiguous().as_strided({2, 2}, {1, 4}, 1);
          })
          .ref(gather_ref({2, 2},
                          [](const std::vector<int64_t>& i) {
                            int64_t flat = 1 + i[0] + 4 * i[1];
                            return std::vector<int64_t>{flat / 4, flat % 4};
                          }))
          .bad("past the storage",
               [] {
                 zeros({3, 4}).as_strided({3, 4}, {4, 2});
               }),
      Row("as_strided", "overlapping")
          .inputs({In::randn({4})})
          .call([](const Tensors& x) {
            return x[0].contiguous().as_strided({3, 2}, {1, 1});
          })
          .ref(gather_ref(
              {3, 2},
              [](const std::vector<int64_t>& i) { return std::vector<int64_t>{i[0] + i[1]}; })),
      Row("view_scatter")
          .inputs({In::randn({2, 2})})
          .call([](const Tensors& x) {
            return call1(op_view_scatter(), {x[0]},
                         ViewScatterAttrs{
                             .base_shape = {3, 3}, .size = {2, 2}, .stride = {3, 1}, .offset = 4});
          })
          .ref([](const Tensors& x) {
            std::vector<double> v = values(x[0]), out(9, 0.0);
            out[4] = v[0];
            out[5] = v[1];
            out[7] = v[2];
            out[8] = v[3];
            return make_f64({3, 3}, out);
          }),
  };
}

}  // namespace ath::testing
