// Op-table rows: linear_relu and convolution_relu, the fused-epilogue forms the compiler's
// "epilogue" pass makes. References: the float64 product / direct convolution loops, then max(0,
// .); gradients against finite differences (the inputs keep pre-activations away from 0).
#include "ops/conv_reference.h"
#include "support/op_table.h"
#include "support/reference.h"

namespace ath::testing {

namespace {

Tensor relu_ref(const Tensor& y) {
  std::vector<double> v = values(y);
  for (double& e : v) e = e > 0 ? e : 0.0;
  return make_f64(y.shape(), v);
}

// max(0, x @ w^T + b) for x [rows, in] (any leading dims), w [out, in].
Tensor linear_relu_ref(const Tensors& x) {
  const Tensor& w = x[1];
  const int64_t out = w.shape()[0], in = w.shape()[1];
  const int64_t rows = x[0].numel() / in;
  const std::vector<double> xv = values(x[0]), wv = values(w);
  const std::vector<double> bv = x.size() == 3 ? values(x[2]) : std::vector<double>();
  std::vector<double> y(static_cast<std::size_t>(rows * out));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double s = bv.empty() ? 0.0 : bv[static_cast<std::size_t>(o)];
      for (int64_t i = 0; i < in; ++i)
        s += xv[static_cast<std::size_t>(r * in + i)] * wv[static_cast<std::size_t>(o * in + i)];
      y[static_cast<std::size_t>(r * out + o)] = s;
    }
  Shape shape(x[0].shape().begin(), x[0].shape().end() - 1);
  shape.push_back(out);
  return relu_ref(make_f64(shape, y));
}

}  // namespace

ATH_OP_ROWS(epilogue) {
  const ConvAttrs pad1{.stride = {1, 1}, .pad_l = {1, 1}, .pad_r = {1, 1}};
  const ConvAttrs strided{.stride = {2, 1}, .pad_l = {0, 1}, .pad_r = {0, 1}, .groups = 2};
  return {
      Row("linear_relu", "bias")
          .inputs({In::randn({2, 3, 4}), In::randn({5, 4}), In::randn({5})})
          .call([](const Tensors& x) { return linear_relu(x[0], x[1], x[2]); })
          .ref(linear_relu_ref)
          .dtypes({kFloat32, kFloat64, kBFloat16})
          .bad("feature mismatch",
               [] {
                 linear_relu(zeros({2, 3}), zeros({5, 4}));
               })
          .bad("bias shape",
               [] {
                 linear_relu(zeros({2, 4}), zeros({5, 4}), zeros({4}));
               }),
      Row("linear_relu", "no_bias_strided")
          .inputs({In::randn({3, 4}).strided(), In::randn({2, 4}).strided()})
          .call([](const Tensors& x) { return linear_relu(x[0], x[1]); })
          .ref(linear_relu_ref),
      Row("convolution_relu", "bias_pad")
          .inputs({In::randn({2, 3, 5, 5}), In::randn({4, 3, 3, 3}), In::randn({4})})
          .call([pad1](const Tensors& x) { return convolution_relu(x[0], x[1], x[2], pad1); })
          .ref([pad1](const Tensors& x) { return relu_ref(conv_ref(x[0], x[1], x[2], pad1)); })
          .dtypes({kFloat32, kFloat64, kBFloat16, kFloat16})
          .tol(1e-5, 1e-5)
          .bad("transposed",
               [] {
                 convolution_relu(zeros({1, 2, 5, 5}), zeros({2, 3, 3, 3}), {},
                                  ConvAttrs{.transposed = true});
               }),
      Row("convolution_relu", "groups_stride_no_bias")
          .inputs({In::randn({1, 4, 6, 5}), In::randn({6, 2, 3, 2})})
          .call([strided](const Tensors& x) { return convolution_relu(x[0], x[1], {}, strided); })
          .ref([strided](const Tensors& x) {
            return relu_ref(conv_ref(x[0], x[1], Tensor(), strided));
          })
          .tol(1e-5, 1e-5),
  };
}

}  // namespace ath::testing
