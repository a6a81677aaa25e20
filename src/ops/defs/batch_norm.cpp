// batch_norm and batch_norm_backward: definitions, shape checks, gradient formulas, and the
// running-stat update (done here with registered in-place ops, so a tracer records it).
#include "athanor/ops/dispatch.h"
#include "athanor/ops/nn_functional.h"
#include "athanor/ops/pointwise.h"
#include "athanor/tensor/grad_mode.h"
#include "norm_grad.h"

namespace ath {

namespace {

int64_t channels_of(const Tensor& x) {
  ATH_CHECK(x.dim() >= 2, ShapeError,
            "expected input of shape [N, C], [N, C, L] or [N, C, H, W], got shape {}",
            to_string(x.shape()));
  return x.shape()[1];
}

detail::NormView batch_norm_view(const Shape& x) {
  int64_t s = 1;
  for (std::size_t i = 2; i < x.size(); ++i) s *= x[i];
  return {{x[0], x[1], s}, {1, x[1], 1}, {1, x[1], 1}, {0, 2}};
}

}  // namespace

const Op<BatchNormAttrs>& op_batch_norm() {
  static const auto& op = define_op<BatchNormAttrs>({
      .name = "batch_norm",
      .kind = OpKind::Opaque,
      .num_inputs = 5,  // x, running_mean, running_var, weight, bias ([0] where absent)
      .num_outputs = 4,
      .autocast = AutocastPolicy::Float32,
      .save_inputs = 0b01001,  // x and weight: never the running stats, updated in place
      .save_outputs = 0b0110,
      .promote_inputs = 0,
      .infer =
          [](TensorSpan in, const BatchNormAttrs& a) {
            const Tensor& x = in[0];
            ATH_CHECK(is_floating(x.dtype()), DTypeError, "expected a floating input, got {}",
                      dtype_name(x.dtype()));
            const int64_t c = channels_of(x);
            detail::check_param(in[1], a.has_running, "running_mean", {c}, x);
            detail::check_param(in[2], a.has_running, "running_var", {c}, x);
            detail::check_param(in[3], a.has_weight, "weight", {c}, x);
            detail::check_param(in[4], a.has_bias, "bias", {c}, x);
            if (a.training) {
              ATH_CHECK(c == 0 || x.numel() / c != 1, ValueError,
                        "expected more than 1 value per channel when training, got input of "
                        "shape {}",
                        to_string(x.shape()));
            } else {
              ATH_CHECK(a.has_running, ValueError,
                        "running_mean and running_var are required in eval mode (input shape {})",
                        to_string(x.shape()));
            }
            DType st = detail::stat_dtype(x.dtype());
            return OutputSpec{{{x.shape(), x.dtype()},
                               {{c}, st},
                               {{c}, st},
                               {a.training ? Shape{c} : Shape{0}, st}},
                              x.dtype()};
          },
      .backward =
          [](BackwardContext& ctx, const BatchNormAttrs& a) {
            auto run = [&](TensorSpan in, const NormGradMask& mask) {
              return call(op_batch_norm_backward(), in,
                          BatchNormBackwardAttrs{
                              .training = a.training, .has_weight = a.has_weight, .mask = mask});
            };
            // Eval statistics come from the running buffers, which get no gradient.
            detail::norm_forward_grad(ctx, batch_norm_view(ctx.input_meta(0).shape), a.has_weight,
                                      a.has_bias, 3, 4, a.training, run);
          },
  });
  return op;
}

const Op<BatchNormBackwardAttrs>& op_batch_norm_backward() {
  static const auto& op = define_op<BatchNormBackwardAttrs>({
      .name = "batch_norm_backward",
      .kind = OpKind::Opaque,
      .num_inputs = 5,  // g, x, mean, rstd, weight
      .num_outputs = 3,
      .save_inputs = 0b11111,
      .promote_inputs = 0b11,
      .infer =
          [](TensorSpan in, const BatchNormBackwardAttrs& a) {
            int64_t c = channels_of(in[1]);
            return detail::norm_backward_spec(in, {c}, {c}, a.has_weight, a.mask);
          },
      .backward =
          [](BackwardContext& ctx, const BatchNormBackwardAttrs& a) {
            detail::norm_backward_grad(ctx, batch_norm_view(ctx.input_meta(1).shape), a.has_weight,
                                       a.mask, /*stats_constant=*/!a.training);
          },
  });
  return op;
}

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, double momentum,
                  double eps) {
  with_op_context(op_batch_norm(), [&] {
    ATH_CHECK(running_mean.defined() == running_var.defined(), ValueError,
              "running_mean and running_var must be given together");
  });
  BatchNormAttrs a{.training = training,
                   .eps = eps,
                   .has_running = running_mean.defined(),
                   .has_weight = weight.defined(),
                   .has_bias = bias.defined()};
  Tensor in[5] = {x, detail::or_absent(running_mean), detail::or_absent(running_var),
                  detail::or_absent(weight), detail::or_absent(bias)};
  Outputs out = call(op_batch_norm(), TensorSpan(in), a);
  if (training && a.has_running && x.numel() > 0) {
    // torch's rule: r = (1 - momentum) * r + momentum * batch, with the unbiased batch variance.
    NoGradGuard no_grad;
    Tensor rm = running_mean, rv = running_var;
    rm.mul_(1.0 - momentum).add_(out[1], momentum);
    rv.mul_(1.0 - momentum).add_(out[3], momentum);
  }
  return std::move(out[0]);
}

}  // namespace ath
