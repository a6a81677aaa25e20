// conv_relu_max_pool (conv_pool.h): the shape rule and the public function. The kernel is
// kernels/cpu/conv_pool.cpp.
#include "athanor/ops/conv_pool.h"

#include "athanor/ops/dispatch.h"

namespace ath {

namespace {

// The shape rule both forms share: the pooled [N, O, PH, PW].
std::array<int64_t, 4> pooled_shape(TensorSpan in, const ConvPoolAttrs& a) {
  ATH_CHECK(in.size() == 2 || in.size() == 3, ValueError,
            "expected (input, weight[, bias]), got {} tensors", in.size());
  for (const Tensor& t : in)
    ATH_CHECK(t.dtype() == kFloat32, DTypeError, "every tensor must be float32, got {}",
              dtype_name(t.dtype()));
  const ConvAttrs& c = a.conv;
  ATH_CHECK(c.groups == 1 && !c.transposed && c.dilation[0] == 1 && c.dilation[1] == 1, ValueError,
            "takes groups 1, dilation 1, not transposed");
  const Tensor &x = in[0], &w = in[1];
  ATH_CHECK(x.dim() == 4 && w.dim() == 4 && w.shape()[1] == x.shape()[1], ShapeError,
            "input {} and weight {} are not an NCHW image and its [O, C, kh, kw] filter",
            to_string(x.shape()), to_string(w.shape()));
  if (in.size() == 3)
    ATH_CHECK(in[2].dim() == 1 && in[2].shape()[0] == w.shape()[0], ShapeError,
              "bias of shape {} for {} output channels", to_string(in[2].shape()), w.shape()[0]);
  std::array<int64_t, 4> out{x.shape()[0], w.shape()[0], 0, 0};
  for (std::size_t i = 0; i < 2; ++i) {
    ATH_CHECK(c.stride[i] >= 1 && c.pad_l[i] >= 0 && c.pad_r[i] >= 0 && a.pool[i] >= 1, ValueError,
              "bad stride, padding or pool size");
    const int64_t span = x.shape()[2 + i] + c.pad_l[i] + c.pad_r[i];
    const int64_t k = w.shape()[2 + i];
    ATH_CHECK(span >= k, ShapeError, "kernel {} larger than the padded input {}", k, span);
    const int64_t conv_out = (span - k) / c.stride[i] + 1;
    ATH_CHECK(conv_out >= a.pool[i], ShapeError,
              "pool window {} larger than the convolution's output {}", a.pool[i], conv_out);
    out[2 + i] = conv_out / a.pool[i];
  }
  return out;
}

}  // namespace

const Op<ConvPoolAttrs>& op_conv_relu_max_pool() {
  static const auto& op = define_op<ConvPoolAttrs>({
      .name = "conv_relu_max_pool",
      .num_inputs = -1,
      .infer =
          [](TensorSpan in, const ConvPoolAttrs& a) {
            return OutputSpec{{{layout_shape(pooled_shape(in, a), a.dst_layout), kFloat32}},
                              kFloat32};
          },
      .not_differentiable = "an inference op (graph/passes.h: conv_pool)",
  });
  return op;
}

const Op<ConvPoolAttrs>& op_conv_relu_max_pool_indices() {
  static const auto& op = define_op<ConvPoolAttrs>({
      .name = "conv_relu_max_pool_indices",
      .num_inputs = -1,
      .num_outputs = 2,
      .infer =
          [](TensorSpan in, const ConvPoolAttrs& a) {
            ATH_CHECK(a.dst_layout == ActivationLayout::Nchw, ValueError,
                      "writes NCHW only (the layout max_pool2d's indices count in)");
            const std::array<int64_t, 4> s = pooled_shape(in, a);
            const Shape out(s.begin(), s.end());
            return OutputSpec{{{out, kFloat32}, {out, kInt64}}, kFloat32};
          },
      .not_differentiable =
          "made by the graph compiler's conv_pool_train pass, whose graph holds the backward",
  });
  return op;
}

Tensor conv_relu_max_pool(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias,
                          const ConvPoolAttrs& attrs) {
  std::vector<Tensor> in{x, weight};
  if (bias) in.push_back(*bias);
  return call(op_conv_relu_max_pool(), TensorSpan(in), attrs)[0];
}

std::pair<Tensor, Tensor> conv_relu_max_pool_indices(const Tensor& x, const Tensor& weight,
                                                     const std::optional<Tensor>& bias,
                                                     const ConvPoolAttrs& attrs) {
  std::vector<Tensor> in{x, weight};
  if (bias) in.push_back(*bias);
  Outputs out = call(op_conv_relu_max_pool_indices(), TensorSpan(in), attrs);
  return {out[0], out[1]};
}

}  // namespace ath
