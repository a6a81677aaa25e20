// conv_relu_max_pool (conv_pool.h): the shape rule and the public function. The kernel is
// kernels/cpu/conv_pool.cpp.
#include "athanor/ops/conv_pool.h"

#include "athanor/ops/dispatch.h"

namespace ath {

namespace {

// The pooled [N, O, PH, PW] of an NCHW x and an [O, C, kh, kw] filter.
std::array<int64_t, 4> pooled_geometry(const Shape& x, const Shape& w, const ConvPoolAttrs& a) {
  const ConvAttrs& c = a.conv;
  ATH_CHECK(c.groups == 1 && !c.transposed && c.dilation[0] == 1 && c.dilation[1] == 1, ValueError,
            "takes groups 1, dilation 1, not transposed");
  ATH_CHECK(x.size() == 4 && w.size() == 4 && w[1] == x[1], ShapeError,
            "input {} and weight {} are not an NCHW image and its [O, C, kh, kw] filter",
            to_string(x), to_string(w));
  std::array<int64_t, 4> out{x[0], w[0], 0, 0};
  for (std::size_t i = 0; i < 2; ++i) {
    ATH_CHECK(c.stride[i] >= 1 && c.pad_l[i] >= 0 && c.pad_r[i] >= 0 && a.pool[i] >= 1, ValueError,
              "bad stride, padding or pool size");
    const int64_t span = x[2 + i] + c.pad_l[i] + c.pad_r[i];
    const int64_t k = w[2 + i];
    ATH_CHECK(span >= k, ShapeError, "kernel {} larger than the padded input {}", k, span);
    const int64_t conv_out = (span - k) / c.stride[i] + 1;
    ATH_CHECK(conv_out >= a.pool[i], ShapeError,
              "pool window {} larger than the convolution's output {}", a.pool[i], conv_out);
    out[2 + i] = conv_out / a.pool[i];
  }
  return out;
}

// The shape rule both forward forms share: the pooled [N, O, PH, PW].
std::array<int64_t, 4> pooled_shape(TensorSpan in, const ConvPoolAttrs& a) {
  ATH_CHECK(in.size() == 2 || in.size() == 3, ValueError,
            "expected (input, weight[, bias]), got {} tensors", in.size());
  for (const Tensor& t : in)
    ATH_CHECK(t.dtype() == kFloat32, DTypeError, "every tensor must be float32, got {}",
              dtype_name(t.dtype()));
  if (in.size() == 3)
    ATH_CHECK(in[2].dim() == 1 && in[1].dim() >= 1 && in[2].shape()[0] == in[1].shape()[0],
              ShapeError, "bias of shape {} for weight {}", to_string(in[2].shape()),
              to_string(in[1].shape()));
  return pooled_geometry(in[0].shape(), in[1].shape(), a);
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

const Op<ConvPoolWeightGradAttrs>& op_conv_relu_max_pool_weight_grad() {
  static const auto& op = define_op<ConvPoolWeightGradAttrs>({
      .name = "conv_relu_max_pool_weight_grad",
      .num_inputs = 4,
      .num_outputs = 2,
      .promote_inputs = 0b1011,  // indices stay int64
      .infer =
          [](TensorSpan in, const ConvPoolWeightGradAttrs& a) {
            for (const Tensor& t : {in[0], in[1], in[3]})
              ATH_CHECK(t.dtype() == kFloat32, DTypeError,
                        "x, grad_pooled and pooled must be float32, got {}", dtype_name(t.dtype()));
            ATH_CHECK(in[2].dtype() == kInt64, DTypeError, "indices must be int64, got {}",
                      dtype_name(in[2].dtype()));
            const ConvAttrs& c = a.forward.conv;
            ATH_CHECK(c.stride[0] == 1 && c.stride[1] == 1, ValueError,
                      "takes a forward of stride 1, got {}x{}", c.stride[0], c.stride[1]);
            ATH_CHECK(a.kernel[0] >= 1 && a.kernel[1] >= 1, ValueError, "bad kernel size");
            const Tensor& x = in[0];
            ATH_CHECK(x.dim() == 4, ShapeError, "x must be NCHW, got {}", to_string(x.shape()));
            // The pooled shape the forward makes from x and a filter of `kernel`.
            const std::array<int64_t, 4> p =
                pooled_geometry(x.shape(), {1, x.shape()[1], a.kernel[0], a.kernel[1]}, a.forward);
            for (std::size_t i = 1; i < 4; ++i) {
              const Shape& s = in[i].shape();
              ATH_CHECK(s.size() == 4 && s[0] == p[0] && s[2] == p[2] && s[3] == p[3] &&
                            s == in[1].shape(),
                        ShapeError,
                        "grad_pooled {}, indices {} and pooled {} must be one [N, O, {}, {}] shape "
                        "for x {}",
                        to_string(in[1].shape()), to_string(in[2].shape()),
                        to_string(in[3].shape()), p[2], p[3], to_string(x.shape()));
            }
            ATH_CHECK(x.shape()[1] * a.kernel[0] * a.kernel[1] <= kMaxConvPoolTaps, ValueError,
                      "takes at most {} filter taps (C * kh * kw), got {}", kMaxConvPoolTaps,
                      x.shape()[1] * a.kernel[0] * a.kernel[1]);
            const int64_t o = in[1].shape()[1];
            return OutputSpec{
                {{{o, x.shape()[1], a.kernel[0], a.kernel[1]}, kFloat32}, {{o}, kFloat32}},
                kFloat32};
          },
      .not_differentiable = "made by the graph compiler's conv_pool_train pass, inside a backward",
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
