// Op-table rows: convolution (conv1d, conv2d, conv_transpose2d) and its weight gradient.
// References are direct loops over every product term (ops/conv_reference.h).
#include "ops/conv_reference.h"
#include "support/op_table.h"
#include "support/reference.h"

namespace ath::testing {

namespace {

const std::vector<DType> kWithBF16{kFloat32, kFloat64, kBFloat16};

ConvAttrs attrs(Int2 stride, Int2 pad_l, Int2 pad_r, Int2 dilation, int64_t groups) {
  return ConvAttrs{.stride = stride.v,
                   .pad_l = pad_l.v,
                   .pad_r = pad_r.v,
                   .dilation = dilation.v,
                   .groups = groups};
}

RefFn conv2d_ref(ConvAttrs a) {
  return [a](const Tensors& x) { return conv_ref(x[0], x[1], x.size() > 2 ? x[2] : Tensor(), a); };
}

RefFn conv1d_ref(ConvAttrs a) {
  return [a](const Tensors& x) {
    Tensor y = conv_ref(x[0].unsqueeze(2), x[1].unsqueeze(2), x.size() > 2 ? x[2] : Tensor(), a);
    return y.squeeze(2);
  };
}

// conv_transpose2d's attrs: pad_r holds padding - output_padding.
RefFn transpose_ref(ConvAttrs a) {
  return [a](const Tensors& x) {
    return conv_transpose_ref(x[0], x[1], x.size() > 2 ? x[2] : Tensor(), a);
  };
}

}  // namespace

ATH_OP_ROWS(conv) {
  const ConvAttrs wgrad_geo = attrs({2, 1}, {1, 0}, {1, 0}, {1, 2}, 2);
  return {
      Row("convolution", "conv2d_bias_pad")
          .inputs({In::randn({2, 3, 5, 5}), In::randn({4, 3, 3, 3}), In::randn({4})})
          .call([](const Tensors& x) { return conv2d(x[0], x[1], x[2], {.padding = 1}); })
          .ref(conv2d_ref(attrs(1, 1, 1, 1, 1)))
          .dtypes({kFloat32, kFloat64, kBFloat16, kFloat16})
          .tol(1e-5, 1e-5)
          .bad("channel mismatch",
               [] {
                 conv2d(zeros({1, 2, 5, 5}), zeros({4, 3, 3, 3}));
               })
          .bad("3-D weight",
               [] {
                 conv2d(zeros({1, 3, 5, 5}), zeros({4, 3, 3}));
               })
          .bad("5-D input",
               [] {
                 conv2d(zeros({1, 1, 3, 5, 5}), zeros({4, 3, 3, 3}));
               })
          .bad("zero stride",
               [] {
                 conv2d(zeros({1, 3, 5, 5}), zeros({4, 3, 3, 3}), {}, {.stride = {0, 1}});
               })
          .bad("negative stride",
               [] {
                 conv2d(zeros({1, 3, 5, 5}), zeros({4, 3, 3, 3}), {}, {.stride = -1});
               })
          .bad("negative padding",
               [] {
                 conv2d(zeros({1, 3, 5, 5}), zeros({4, 3, 3, 3}), {}, {.padding = -1});
               })
          .bad("bias shape",
               [] {
                 conv2d(zeros({1, 3, 5, 5}), zeros({4, 3, 3, 3}), zeros({3}));
               })
          .bad("kernel larger than padded input",
               [] {
                 conv2d(zeros({1, 3, 2, 5}), zeros({4, 3, 3, 3}), {}, {.padding = {0, 1}});
               })
          .bad("unknown padding mode",
               [] {
                 conv2d(zeros({1, 3, 5, 5}), zeros({4, 3, 3, 3}), {}, {.padding = "full"});
               })
          .bad("integer input",
               [] {
                 conv2d(zeros({1, 3, 5, 5}, kInt64), zeros({4, 3, 3, 3}, kInt64));
               }),
      Row("convolution", "conv2d_groups_dilation_stride")
          .inputs({In::randn({2, 4, 7, 6}), In::randn({6, 2, 3, 2}), In::randn({6})})
          .call([](const Tensors& x) {
            return conv2d(x[0], x[1], x[2],
                          {.stride = {2, 1}, .padding = {1, 0}, .dilation = {1, 2}, .groups = 2});
          })
          .ref(conv2d_ref(attrs({2, 1}, {1, 0}, {1, 0}, {1, 2}, 2)))
          .dtypes(kWithBF16)
          .tol(1e-5, 1e-5)
          .bad("channels not divisible by groups",
               [] {
                 conv2d(zeros({1, 4, 5, 5}), zeros({6, 2, 3, 3}), {}, {.groups = 3});
               })
          .bad("zero groups",
               [] {
                 conv2d(zeros({1, 4, 5, 5}), zeros({6, 2, 3, 3}), {}, {.groups = 0});
               }),
      Row("convolution", "conv2d_strided_input_no_bias")
          .inputs({In::randn({1, 2, 6, 5}).strided(), In::randn({3, 2, 2, 3}).strided()})
          .call([](const Tensors& x) { return conv2d(x[0], x[1], {}, {.stride = 2}); })
          .ref(conv2d_ref(attrs(2, 0, 0, 1, 1)))
          .tol(1e-5, 1e-5),
      Row("convolution", "conv2d_same_even_kernel")
          .inputs({In::randn({1, 2, 5, 6}), In::randn({3, 2, 2, 4}), In::randn({3})})
          .call([](const Tensors& x) {
            return conv2d(x[0], x[1], x[2], {.padding = "same", .dilation = {1, 2}});
          })
          // total padding dilation * (k - 1) = (1, 6): top 0 / bottom 1, left 3 / right 3
          .ref(conv2d_ref(attrs(1, {0, 3}, {1, 3}, {1, 2}, 1)))
          .tol(1e-5, 1e-5)
          .bad("same with stride 2",
               [] {
                 conv2d(zeros({1, 2, 5, 6}), zeros({3, 2, 2, 4}), {},
                        {.stride = 2, .padding = "same"});
               }),
      Row("convolution", "conv2d_valid_unbatched")
          .inputs({In::randn({2, 4, 4}), In::randn({3, 2, 3, 3})})
          .call([](const Tensors& x) { return conv2d(x[0], x[1], {}, {.padding = "valid"}); })
          .ref([](const Tensors& x) {
            return conv_ref(x[0].unsqueeze(0), x[1], Tensor(), attrs(1, 0, 0, 1, 1)).squeeze(0);
          }),
      Row("convolution", "conv2d_zero_batch")
          .inputs({In::randn({0, 3, 5, 5}), In::randn({4, 3, 3, 3}), In::randn({4})})
          .call([](const Tensors& x) { return conv2d(x[0], x[1], x[2]); })
          .ref(conv2d_ref(attrs(1, 0, 0, 1, 1))),
      Row("convolution", "conv1d")
          .inputs({In::randn({2, 3, 9}), In::randn({4, 3, 3}), In::randn({4})})
          .call([](const Tensors& x) {
            return conv1d(x[0], x[1], x[2], {.stride = 2, .padding = 1});
          })
          .ref(conv1d_ref(attrs({1, 2}, {0, 1}, {0, 1}, 1, 1)))
          .dtypes(kWithBF16)
          .tol(1e-5, 1e-5)
          .bad("2-D weight",
               [] {
                 conv1d(zeros({2, 3, 9}), zeros({4, 3}));
               })
          .bad("zero dilation",
               [] {
                 conv1d(zeros({2, 3, 9}), zeros({4, 3, 3}), {}, {.dilation = 0});
               }),
      Row("convolution", "conv1d_same_groups_dilation")
          .inputs({In::randn({1, 4, 8}), In::randn({6, 2, 4})})
          .call([](const Tensors& x) {
            return conv1d(x[0], x[1], {}, {.padding = "same", .dilation = 2, .groups = 2});
          })
          .ref(conv1d_ref(attrs({1, 1}, {0, 3}, {0, 3}, {1, 2}, 2)))
          .tol(1e-5, 1e-5),
      Row("convolution", "conv_transpose2d_output_padding")
          .inputs({In::randn({2, 4, 3, 3}), In::randn({4, 3, 3, 3}), In::randn({3})})
          .call([](const Tensors& x) {
            return conv_transpose2d(x[0], x[1], x[2],
                                    {.stride = 2, .padding = 1, .output_padding = 1});
          })
          .ref(transpose_ref(attrs(2, 1, 0, 1, 1)))
          .dtypes(kWithBF16)
          .tol(1e-5, 1e-5)
          .bad("output_padding not below stride or dilation",
               [] {
                 conv_transpose2d(zeros({1, 4, 3, 3}), zeros({4, 3, 3, 3}), {},
                                  {.stride = 2, .output_padding = 2});
               })
          .bad("channel mismatch",
               [] {
                 conv_transpose2d(zeros({1, 3, 3, 3}), zeros({4, 3, 3, 3}));
               }),
      Row("convolution", "conv_transpose2d_groups_dilation")
          .inputs({In::randn({1, 4, 4, 3}), In::randn({4, 2, 2, 3}), In::randn({4})})
          .call([](const Tensors& x) {
            return conv_transpose2d(
                x[0], x[1], x[2],
                {.stride = {1, 2}, .padding = {0, 1}, .groups = 2, .dilation = {2, 1}});
          })
          .ref(transpose_ref(attrs({1, 2}, {0, 1}, {0, 1}, {2, 1}, 2)))
          .tol(1e-5, 1e-5),
      Row("convolution", "conv_transpose2d_output_padding_below_dilation")
          // stride 1, dilation 2, output_padding 1: a geometry oneDNN cannot express (direct loops)
          .inputs({In::randn({1, 2, 3, 3}), In::randn({2, 2, 2, 2})})
          .call([](const Tensors& x) {
            return conv_transpose2d(x[0], x[1], {}, {.output_padding = 1, .dilation = 2});
          })
          .ref(transpose_ref(attrs(1, 0, -1, 2, 1)))
          .tol(1e-5, 1e-5),
      Row("convolution_backward_weight", "weight")
          .inputs({In::randn({2, 4, 7, 6}), In::randn({2, 6, 4, 4})})
          .call([wgrad_geo](const Tensors& x) {
            Tensor in[2] = {x[0], x[1]};
            return call(
                op_convolution_backward_weight(), TensorSpan(in),
                ConvWeightGradAttrs{.geometry = wgrad_geo, .kernel = {3, 2}, .with_bias = true})[0];
          })
          .ref([wgrad_geo](const Tensors& x) {
            return conv_weight_grad_ref(x[0], x[1], {3, 2}, wgrad_geo).first;
          })
          .dtypes(kWithBF16)
          .tol(1e-5, 1e-5)
          .bad("gradient shape does not match the geometry",
               [wgrad_geo] {
                 Tensor in[2] = {zeros({2, 4, 7, 6}), zeros({2, 6, 4, 5})};
                 call(op_convolution_backward_weight(), TensorSpan(in),
                      ConvWeightGradAttrs{.geometry = wgrad_geo, .kernel = {3, 2}});
               }),
      Row("convolution_backward_weight", "bias")
          .inputs({In::randn({2, 4, 7, 6}), In::randn({2, 6, 4, 4})})
          .call([wgrad_geo](const Tensors& x) {
            Tensor in[2] = {x[0], x[1]};
            return call(
                op_convolution_backward_weight(), TensorSpan(in),
                ConvWeightGradAttrs{.geometry = wgrad_geo, .kernel = {3, 2}, .with_bias = true})[1];
          })
          .ref([wgrad_geo](const Tensors& x) {
            return conv_weight_grad_ref(x[0], x[1], {3, 2}, wgrad_geo).second;
          })
          .tol(1e-5, 1e-5),
  };
}

}  // namespace ath::testing
