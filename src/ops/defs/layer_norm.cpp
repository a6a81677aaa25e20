// layer_norm and layer_norm_backward: definitions, shape checks and gradient formulas.
#include "athanor/ops/dispatch.h"
#include "athanor/ops/nn_functional.h"
#include "norm_grad.h"

namespace ath {

namespace {

void check_normalized_shape(const Tensor& x, const Shape& ns) {
  const auto k = static_cast<int64_t>(ns.size());
  ATH_CHECK(k > 0, ShapeError, "normalized_shape must have at least one dim, got {}",
            to_string(ns));
  bool ok = x.dim() >= k;
  for (int64_t i = 0; ok && i < k; ++i) ok = x.shape()[x.dim() - k + i] == ns[i];
  ATH_CHECK(ok, ShapeError,
            "given normalized_shape={}, expected input whose trailing dims are {}, but got "
            "input of shape {}",
            to_string(ns), to_string(ns), to_string(x.shape()));
}

// mean/rstd keep x's outer dims, with the normalized dims as 1 (like torch's).
Shape stat_shape(const Shape& x, std::size_t k) {
  Shape s = x;
  for (std::size_t i = s.size() - k; i < s.size(); ++i) s[i] = 1;
  return s;
}

detail::NormView layer_norm_view(const Shape& x, const Shape& ns) {
  int64_t m = 1;
  for (std::size_t i = 0; i < x.size() - ns.size(); ++i) m *= x[i];
  int64_t n = numel(ns);
  return {{m, n}, {m, 1}, {1, n}, {1}};
}

}  // namespace

const Op<LayerNormAttrs>& op_layer_norm() {
  static const auto& op = define_op<LayerNormAttrs>({
      .name = "layer_norm",
      .kind = OpKind::Opaque,
      .num_inputs = 3,  // x, weight, bias (absent ones are [0] placeholders)
      .num_outputs = 3,
      .autocast = AutocastPolicy::Float32,
      .save_inputs = 0b011,
      .save_outputs = 0b110,
      .promote_inputs = 0,  // the kernel reads weight and bias in any floating dtype
      .infer =
          [](TensorSpan in, const LayerNormAttrs& a) {
            const Tensor& x = in[0];
            ATH_CHECK(is_floating(x.dtype()), DTypeError, "expected a floating input, got {}",
                      dtype_name(x.dtype()));
            check_normalized_shape(x, a.normalized_shape);
            detail::check_param(in[1], a.has_weight, "weight", a.normalized_shape, x);
            detail::check_param(in[2], a.has_bias, "bias", a.normalized_shape, x);
            Shape s = stat_shape(x.shape(), a.normalized_shape.size());
            DType st = detail::stat_dtype(x.dtype());
            return OutputSpec{{{x.shape(), x.dtype()}, {s, st}, {s, st}}, x.dtype()};
          },
      .backward =
          [](BackwardContext& ctx, const LayerNormAttrs& a) {
            auto run = [&](TensorSpan in, const NormGradMask& mask) {
              return call(op_layer_norm_backward(), in,
                          LayerNormBackwardAttrs{.normalized_shape = a.normalized_shape,
                                                 .has_weight = a.has_weight,
                                                 .mask = mask});
            };
            detail::norm_forward_grad(ctx,
                                      layer_norm_view(ctx.input_meta(0).shape, a.normalized_shape),
                                      a.has_weight, a.has_bias, 1, 2, true, run);
          },
  });
  return op;
}

const Op<LayerNormBackwardAttrs>& op_layer_norm_backward() {
  static const auto& op = define_op<LayerNormBackwardAttrs>({
      .name = "layer_norm_backward",
      .kind = OpKind::Opaque,
      .num_inputs = 5,  // g, x, mean, rstd, weight
      .num_outputs = 3,
      .save_inputs = 0b11111,
      .promote_inputs = 0b11,
      .infer =
          [](TensorSpan in, const LayerNormBackwardAttrs& a) {
            check_normalized_shape(in[1], a.normalized_shape);
            return detail::norm_backward_spec(in,
                                              stat_shape(in[1].shape(), a.normalized_shape.size()),
                                              a.normalized_shape, a.has_weight, a.mask);
          },
      .backward =
          [](BackwardContext& ctx, const LayerNormBackwardAttrs& a) {
            detail::norm_backward_grad(ctx,
                                       layer_norm_view(ctx.input_meta(1).shape, a.normalized_shape),
                                       a.has_weight, a.mask, /*stats_constant=*/false);
          },
  });
  return op;
}

const Op<LayerNormBackwardAttrs>& op_layer_norm_backward_add() {
  static const auto& op = define_op<LayerNormBackwardAttrs>({
      .name = "layer_norm_backward_add",
      .kind = OpKind::Opaque,
      .num_inputs = 6,  // g, x, mean, rstd, weight, addend
      .num_outputs = 3,
      .promote_inputs = 0b100011,
      .infer =
          [](TensorSpan in, const LayerNormBackwardAttrs& a) {
            check_normalized_shape(in[1], a.normalized_shape);
            ATH_CHECK(a.mask[0], ValueError,
                      "the addend is added to dx, which the mask leaves out");
            OutputSpec spec =
                detail::norm_backward_spec(in, stat_shape(in[1].shape(), a.normalized_shape.size()),
                                           a.normalized_shape, a.has_weight, a.mask);
            ATH_CHECK(in[5].shape() == in[1].shape(), ShapeError,
                      "addend of shape {} does not match the input's shape {}",
                      to_string(in[5].shape()), to_string(in[1].shape()));
            return spec;
          },
      .not_differentiable = "a fused backward op, made by the graph compiler",
  });
  return op;
}

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
  LayerNormAttrs a{.normalized_shape = normalized_shape,
                   .eps = eps,
                   .has_weight = weight.defined(),
                   .has_bias = bias.defined()};
  Tensor in[3] = {x, detail::or_absent(weight), detail::or_absent(bias)};
  return std::move(call(op_layer_norm(), TensorSpan(in), a)[0]);
}

}  // namespace ath
