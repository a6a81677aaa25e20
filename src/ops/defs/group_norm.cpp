// group_norm and group_norm_backward: definitions, shape checks and gradient formulas.
#include "athanor/ops/dispatch.h"
#include "athanor/ops/nn_functional.h"
#include "norm_grad.h"

namespace ath {

namespace {

// Validates x [N, C, *] against num_groups; returns C.
int64_t check_groups(const Tensor& x, int64_t groups) {
  ATH_CHECK(x.dim() >= 2, ShapeError, "expected input of shape [N, C, *], got shape {}",
            to_string(x.shape()));
  ATH_CHECK(groups > 0, ValueError, "num_groups must be positive, got {}", groups);
  const int64_t c = x.shape()[1];
  ATH_CHECK(c % groups == 0, ShapeError,
            "expected the number of channels in input of shape {} to be divisible by "
            "num_groups={}",
            to_string(x.shape()), groups);
  return c;
}

detail::NormView group_norm_view(const Shape& x, int64_t g) {
  int64_t s = 1;
  for (std::size_t i = 2; i < x.size(); ++i) s *= x[i];
  const int64_t n = x[0], cg = x[1] / g;
  return {{n, g, cg, s}, {n, g, 1, 1}, {1, g, cg, 1}, {2, 3}};
}

}  // namespace

const Op<GroupNormAttrs>& op_group_norm() {
  static const auto& op = define_op<GroupNormAttrs>({
      .name = "group_norm",
      .kind = OpKind::Opaque,
      .num_inputs = 3,  // x, weight, bias ([0] where absent)
      .num_outputs = 3,
      .autocast = AutocastPolicy::Float32,
      .save_inputs = 0b011,
      .save_outputs = 0b110,
      .promote_inputs = 0,
      .infer =
          [](TensorSpan in, const GroupNormAttrs& a) {
            const Tensor& x = in[0];
            ATH_CHECK(is_floating(x.dtype()), DTypeError, "expected a floating input, got {}",
                      dtype_name(x.dtype()));
            const int64_t c = check_groups(x, a.num_groups);
            detail::check_param(in[1], a.has_weight, "weight", {c}, x);
            detail::check_param(in[2], a.has_bias, "bias", {c}, x);
            Shape s{x.shape()[0], a.num_groups};
            DType st = detail::stat_dtype(x.dtype());
            return OutputSpec{{{x.shape(), x.dtype()}, {s, st}, {s, st}}, x.dtype()};
          },
      .backward =
          [](BackwardContext& ctx, const GroupNormAttrs& a) {
            auto run = [&](TensorSpan in, const NormGradMask& mask) {
              return call(
                  op_group_norm_backward(), in,
                  GroupNormBackwardAttrs{
                      .num_groups = a.num_groups, .has_weight = a.has_weight, .mask = mask});
            };
            detail::norm_forward_grad(ctx, group_norm_view(ctx.input_meta(0).shape, a.num_groups),
                                      a.has_weight, a.has_bias, 1, 2, true, run);
          },
  });
  return op;
}

const Op<GroupNormBackwardAttrs>& op_group_norm_backward() {
  static const auto& op = define_op<GroupNormBackwardAttrs>({
      .name = "group_norm_backward",
      .kind = OpKind::Opaque,
      .num_inputs = 5,  // g, x, mean, rstd, weight
      .num_outputs = 3,
      .save_inputs = 0b11111,
      .promote_inputs = 0b11,
      .infer =
          [](TensorSpan in, const GroupNormBackwardAttrs& a) {
            const int64_t c = check_groups(in[1], a.num_groups);
            return detail::norm_backward_spec(in, {in[1].shape()[0], a.num_groups}, {c},
                                              a.has_weight, a.mask);
          },
      .backward =
          [](BackwardContext& ctx, const GroupNormBackwardAttrs& a) {
            detail::norm_backward_grad(ctx, group_norm_view(ctx.input_meta(1).shape, a.num_groups),
                                       a.has_weight, a.mask, /*stats_constant=*/false);
          },
  });
  return op;
}

Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight, const Tensor& bias,
                  double eps) {
  GroupNormAttrs a{.num_groups = num_groups,
                   .eps = eps,
                   .has_weight = weight.defined(),
                   .has_bias = bias.defined()};
  Tensor in[3] = {x, detail::or_absent(weight), detail::or_absent(bias)};
  return std::move(call(op_group_norm(), TensorSpan(in), a)[0]);
}

}  // namespace ath
