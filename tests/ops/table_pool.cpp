// Op-table rows: max_pool2d, avg_pool2d, adaptive_avg_pool2d and their backward ops. References
// are direct loops (ops/conv_reference.h); a backward op's reference is the adjoint of its
// forward reference, built column by column from unit inputs.
#include "ops/conv_reference.h"
#include "support/op_table.h"
#include "support/reference.h"

namespace ath::testing {

namespace {

// g -> A^T g for the linear map A = f, over inputs of `in_shape` (naive: one unit vector at a
// time; for the small shapes of the table).
Tensor adjoint_ref(const std::function<Tensor(const Tensor&)>& f, const Shape& in_shape,
                   const Tensor& g) {
  const int64_t n = numel(in_shape);
  std::vector<double> gv = values(g), out(static_cast<std::size_t>(n), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    std::vector<double> e(static_cast<std::size_t>(n), 0.0);
    e[static_cast<std::size_t>(i)] = 1.0;
    std::vector<double> col = values(f(make_f64(in_shape, e)));
    double s = 0;
    for (std::size_t j = 0; j < col.size(); ++j) s += col[j] * gv[j];
    out[static_cast<std::size_t>(i)] = s;
  }
  return make_f64(in_shape, out);
}

MaxPool2dAttrs max_attrs(Int2 k, Int2 s, Int2 p, Int2 d, bool ceil_mode) {
  return {.kernel = k.v, .stride = s.v, .padding = p.v, .dilation = d.v, .ceil_mode = ceil_mode};
}

AvgPool2dAttrs avg_attrs(Int2 k, Int2 s, Int2 p, bool ceil_mode, bool include_pad,
                         int64_t divisor = 0) {
  return {.kernel = k.v,
          .stride = s.v,
          .padding = p.v,
          .ceil_mode = ceil_mode,
          .count_include_pad = include_pad,
          .divisor_override = divisor};
}

// The max-pool indices (as int64) of x under attrs, computed by the reference.
Tensor ref_indices(const Tensor& x, const MaxPool2dAttrs& a) {
  return max_pool_ref(x.to(kFloat64), a).second.to(kInt64);
}

}  // namespace

ATH_OP_ROWS(pool) {
  const MaxPool2dAttrs mp = max_attrs(3, 2, 1, 1, true);
  const AvgPool2dAttrs ap = avg_attrs(3, 2, 1, true, false);
  return {
      Row("max_pool2d", "ceil_mode_padding")
          .inputs({In::randn({2, 3, 6, 7})})
          .call([](const Tensors& x) {
            return max_pool2d(x[0], {.kernel = 3, .stride = 2, .padding = 1, .ceil_mode = true});
          })
          .ref([mp](const Tensors& x) { return max_pool_ref(x[0], mp).first; })
          .dtypes({kFloat32, kFloat64, kBFloat16, kFloat16})
          .bad("padding above half the kernel",
               [] {
                 max_pool2d(zeros({1, 1, 5, 5}), {.kernel = 2, .padding = 2});
               })
          .bad("kernel larger than the input",
               [] {
                 max_pool2d(zeros({1, 1, 2, 2}), {.kernel = 3});
               })
          .bad("zero stride",
               [] {
                 max_pool2d(zeros({1, 1, 5, 5}), {.kernel = 2, .stride = 0});
               })
          .bad("zero kernel",
               [] {
                 max_pool2d(zeros({1, 1, 5, 5}), {.kernel = 0});
               })
          .bad("2-D input",
               [] {
                 max_pool2d(zeros({5, 5}), {.kernel = 2});
               })
          .bad("integer input",
               [] {
                 max_pool2d(zeros({1, 1, 4, 4}, kInt64), {.kernel = 2});
               }),
      Row("max_pool2d", "indices")
          .inputs({In::randn({2, 3, 6, 7})})
          .call([](const Tensors& x) {
            return max_pool2d_with_indices(
                       x[0], {.kernel = 3, .stride = 2, .padding = 1, .ceil_mode = true})
                .second;
          })
          .ref([mp](const Tensors& x) { return max_pool_ref(x[0], mp).second; })
          .exact()
          .no_gradcheck(),
      Row("max_pool2d", "dilation_rect_stride")
          .inputs({In::randn({1, 2, 9, 8}).strided()})
          .call([](const Tensors& x) {
            return max_pool2d(x[0], {.kernel = {3, 2}, .stride = {2, 3}, .dilation = {2, 1}});
          })
          .ref([](const Tensors& x) {
            return max_pool_ref(x[0], max_attrs({3, 2}, {2, 3}, 0, {2, 1}, false)).first;
          }),
      Row("max_pool2d", "unbatched_default_stride")
          .inputs({In::randn({2, 4, 6})})
          .call([](const Tensors& x) { return max_pool2d(x[0], {.kernel = 2}); })
          .ref([](const Tensors& x) {
            return max_pool_ref(x[0].unsqueeze(0), max_attrs(2, 2, 0, 1, false)).first.squeeze(0);
          }),
      Row("max_pool2d_backward")
          .inputs({In::randn({2, 3, 6, 7}).no_grad(), In::randn({2, 3, 4, 4})})
          .call([mp](const Tensors& x) {
            Tensor in[2] = {x[1], ref_indices(x[0], mp)};
            return call1(op_max_pool2d_backward(), TensorSpan(in), PoolGradAttrs{.input = {6, 7}});
          })
          .ref([mp](const Tensors& x) {
            Tensor idx = ref_indices(x[0], mp);
            return adjoint_ref(
                [&](const Tensor& v) {
                  Tensor in[2] = {v, idx};
                  return call1(op_max_pool2d_gather(), TensorSpan(in));
                },
                x[0].shape(), x[1]);
          })
          .bad("index out of range",
               [] {
                 Tensor in[2] = {zeros({1, 1, 1, 2}), full({1, 1, 1, 2}, int64_t{9})};
                 call1(op_max_pool2d_backward(), TensorSpan(in), PoolGradAttrs{.input = {2, 4}});
               })
          .bad("float indices",
               [] {
                 Tensor in[2] = {zeros({1, 1, 1, 2}), zeros({1, 1, 1, 2})};
                 call1(op_max_pool2d_backward(), TensorSpan(in), PoolGradAttrs{.input = {2, 4}});
               }),
      Row("max_pool2d_backward_masked")
          .inputs({In::randn({2, 3, 6, 7}).no_grad(), In::randn({2, 3, 4, 4})})
          .call([mp](const Tensors& x) {
            Tensor pooled = max_pool_ref(x[0].to(kFloat64), mp).first.to(x[1].dtype());
            Tensor in[3] = {x[1], ref_indices(x[0], mp), pooled};
            return call1(op_max_pool2d_backward_masked(), TensorSpan(in),
                         PoolGradAttrs{.input = {6, 7}});
          })
          .ref([mp](const Tensors& x) {
            Tensor idx = ref_indices(x[0], mp);
            Tensor scattered = adjoint_ref(
                [&](const Tensor& v) {
                  Tensor in[2] = {v, idx};
                  return call1(op_max_pool2d_gather(), TensorSpan(in));
                },
                x[0].shape(), x[1]);
            return scattered * gt(x[0], zeros({}, x[0].dtype())).to(kFloat64);
          })
          .dtypes({kFloat32, kFloat64, kBFloat16})
          .bad("pooled values of another shape",
               [] {
                 Tensor in[3] = {zeros({1, 1, 1, 2}), zeros({1, 1, 1, 2}, kInt64),
                                 zeros({1, 1, 1, 3})};
                 call1(op_max_pool2d_backward_masked(), TensorSpan(in),
                       PoolGradAttrs{.input = {2, 4}});
               })
          .bad("index out of range",
               [] {
                 Tensor in[3] = {zeros({1, 1, 1, 2}), full({1, 1, 1, 2}, int64_t{9}),
                                 zeros({1, 1, 1, 2})};
                 call1(op_max_pool2d_backward_masked(), TensorSpan(in),
                       PoolGradAttrs{.input = {2, 4}});
               }),
      Row("max_pool2d_gather")
          .inputs({In::randn({2, 3, 6, 7}).no_grad(), In::randn({2, 3, 6, 7})})
          .call([mp](const Tensors& x) {
            Tensor in[2] = {x[1], ref_indices(x[0], mp)};
            return call1(op_max_pool2d_gather(), TensorSpan(in));
          })
          .ref([mp](const Tensors& x) {
            // values of x[1] at x[0]'s argmax positions
            std::vector<double> v = values(x[1]), idx = values(max_pool_ref(x[0], mp).second), out;
            for (std::size_t j = 0; j < idx.size(); ++j) {
              std::size_t plane = j / 16;
              out.push_back(v[plane * 42 + static_cast<std::size_t>(idx[j])]);
            }
            return make_f64({2, 3, 4, 4}, out);
          })
          .bad("negative index",
               [] {
                 Tensor in[2] = {zeros({1, 1, 2, 2}), full({1, 1, 1, 1}, int64_t{-1})};
                 call1(op_max_pool2d_gather(), TensorSpan(in));
               }),
      Row("avg_pool2d", "ceil_mode_exclude_pad")
          .inputs({In::randn({2, 3, 6, 7})})
          .call([](const Tensors& x) {
            return avg_pool2d(x[0], {.kernel = 3,
                                     .stride = 2,
                                     .padding = 1,
                                     .ceil_mode = true,
                                     .count_include_pad = false});
          })
          .ref([ap](const Tensors& x) { return avg_pool_ref(x[0], ap); })
          .dtypes({kFloat32, kFloat64, kBFloat16, kFloat16})
          .bad("padding above half the kernel",
               [] {
                 avg_pool2d(zeros({1, 1, 5, 5}), {.kernel = 3, .padding = 2});
               })
          .bad("zero divisor",
               [] {
                 avg_pool2d(zeros({1, 1, 5, 5}), {.kernel = 2, .divisor_override = 0});
               })
          .bad("kernel larger than the input",
               [] {
                 avg_pool2d(zeros({1, 1, 2, 2}), {.kernel = {3, 1}});
               }),
      Row("avg_pool2d", "ceil_mode_include_pad")
          .inputs({In::randn({1, 2, 5, 8}).strided()})
          .call([](const Tensors& x) {
            return avg_pool2d(
                x[0], {.kernel = {2, 3}, .stride = {2, 2}, .padding = {1, 1}, .ceil_mode = true});
          })
          .ref([](const Tensors& x) {
            return avg_pool_ref(x[0], avg_attrs({2, 3}, 2, 1, true, true));
          }),
      Row("avg_pool2d", "divisor_override")
          .inputs({In::randn({1, 2, 4, 4})})
          .call([](const Tensors& x) {
            return avg_pool2d(x[0], {.kernel = 2, .stride = 1, .divisor_override = 3});
          })
          .ref([](const Tensors& x) {
            return avg_pool_ref(x[0], avg_attrs(2, 1, 0, false, true, 3));
          }),
      Row("avg_pool2d_backward")
          .inputs({In::randn({2, 3, 4, 4})})
          .call([ap](const Tensors& x) {
            return call1(op_avg_pool2d_backward(), {x[0]},
                         AvgPoolGradAttrs{.pool = ap, .input = {6, 7}});
          })
          .ref([ap](const Tensors& x) {
            return adjoint_ref([&](const Tensor& v) { return avg_pool_ref(v, ap); }, {2, 3, 6, 7},
                               x[0]);
          })
          .bad("gradient shape does not match",
               [ap] {
                 call1(op_avg_pool2d_backward(), {zeros({2, 3, 3, 4})},
                       AvgPoolGradAttrs{.pool = ap, .input = {6, 7}});
               }),
      Row("adaptive_avg_pool2d", "non_divisible")
          .inputs({In::randn({2, 3, 7, 5})})
          .call([](const Tensors& x) {
            return adaptive_avg_pool2d(x[0], {3, 4});
          })
          .ref([](const Tensors& x) {
            return adaptive_avg_pool_ref(x[0], {3, 4});
          })
          .dtypes({kFloat32, kFloat64, kBFloat16, kFloat16})
          .bad("zero output size",
               [] {
                 adaptive_avg_pool2d(zeros({1, 1, 4, 4}), {0, 2});
               })
          .bad("empty plane",
               [] {
                 adaptive_avg_pool2d(zeros({1, 1, 0, 4}), 2);
               }),
      Row("adaptive_avg_pool2d", "upsampling_and_global")
          .inputs({In::randn({1, 2, 3, 4}).strided()})
          .call([](const Tensors& x) {
            return adaptive_avg_pool2d(x[0], {5, 1}) * 2.0;
          })
          .ref([](const Tensors& x) {
            return adaptive_avg_pool_ref(x[0], {5, 1}) * 2.0;
          }),
      Row("adaptive_avg_pool2d_backward")
          .inputs({In::randn({2, 3, 3, 4})})
          .call([](const Tensors& x) {
            return call1(op_adaptive_avg_pool2d_backward(), {x[0]}, PoolGradAttrs{.input = {7, 5}});
          })
          .ref([](const Tensors& x) {
            return adjoint_ref(
                [](const Tensor& v) {
                  return adaptive_avg_pool_ref(v, {3, 4});
                },
                {2, 3, 7, 5}, x[0]);
          }),
  };
}

}  // namespace ath::testing
