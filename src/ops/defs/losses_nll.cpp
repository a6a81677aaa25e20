// nll_loss and nll_loss_backward: definitions and gradient formulas.
#include "athanor/ops/dispatch.h"
#include "loss_checks.h"

namespace ath {

const Op<NllLossAttrs>& op_nll_loss() {
  static const auto& op = define_op<NllLossAttrs>({
      .name = "nll_loss",
      .kind = OpKind::Opaque,
      .num_inputs = 3,   // x (log-probabilities), target, weight ([0] when absent)
      .num_outputs = 2,  // loss, total_weight
      .autocast = AutocastPolicy::Float32,
      .save_inputs = 0b110,
      .save_outputs = 0b10,
      .promote_inputs = 0b101,
      .infer =
          [](TensorSpan in, const NllLossAttrs& a) {
            detail::check_reduction(a.reduction);
            const Tensor& x = in[0];
            Shape pos = detail::check_class_target(x.shape(), x.dtype(), in[1]);
            detail::check_class_weight(in[2], a.has_weight, x.shape()[detail::class_dim(x.dim())]);
            DType st = detail::stat_dtype(x.dtype());
            return OutputSpec{{{detail::loss_shape(a.reduction, pos), x.dtype()}, {{}, st}},
                              x.dtype()};
          },
      .backward =
          [](BackwardContext& ctx, const NllLossAttrs& a) {
            if (!ctx.needs_grad(0)) return;
            NllLossAttrs b = a;
            b.input_shape = ctx.input_meta(0).shape;
            ctx.set_grad_input(
                0, call1(op_nll_loss_backward(),
                         {ctx.grad_output(0), ctx.input(1), ctx.input(2), ctx.output(1)}, b));
          },
  });
  return op;
}

const Op<NllLossAttrs>& op_nll_loss_backward() {
  static const auto& op = define_op<NllLossAttrs>({
      .name = "nll_loss_backward",
      .kind = OpKind::Opaque,
      .num_inputs = 4,  // g, target, weight, total_weight
      .save_inputs = 0b0110,
      .promote_inputs = 0b0101,
      .infer =
          [](TensorSpan in, const NllLossAttrs& a) {
            detail::check_reduction(a.reduction);
            const Tensor& g = in[0];
            ATH_CHECK(is_floating(g.dtype()), DTypeError, "expected a floating gradient, got {}",
                      dtype_name(g.dtype()));
            Shape pos = detail::check_class_target(a.input_shape, g.dtype(), in[1]);
            detail::check_class_weight(
                in[2], a.has_weight,
                a.input_shape[detail::class_dim(static_cast<int64_t>(a.input_shape.size()))]);
            Shape gs = detail::loss_shape(a.reduction, pos);
            ATH_CHECK(g.shape() == gs, ShapeError, "expected a loss gradient of shape {}, got {}",
                      to_string(gs), to_string(g.shape()));
            ATH_CHECK(in[3].dim() == 0 && is_floating(in[3].dtype()), ShapeError,
                      "expected a floating 0-dim total_weight, got {} {}", to_string(in[3].shape()),
                      dtype_name(in[3].dtype()));
            return OutputSpec{{{a.input_shape, g.dtype()}}, g.dtype()};
          },
      .backward =
          [](BackwardContext& ctx, const NllLossAttrs& a) {
            // dx = scatter of -w[t] * g / denom: linear in g, so its adjoint is nll_loss itself
            // (which recomputes the same denominator), as in torch.
            if (!ctx.needs_grad(0)) return;
            NllLossAttrs f = a;
            f.input_shape = {};
            ctx.set_grad_input(
                0, call1(op_nll_loss(), {ctx.grad_output(0), ctx.input(1), ctx.input(2)}, f));
          },
  });
  return op;
}

Tensor nll_loss(const Tensor& input, const Tensor& target, const NllLossOptions& options) {
  NllLossAttrs a{.reduction = options.reduction,
                 .ignore_index = options.ignore_index,
                 .has_weight = options.weight.defined()};
  return call1(op_nll_loss(), {input, target, detail::or_absent(options.weight)}, a);
}

}  // namespace ath
