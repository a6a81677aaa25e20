// linear_relu and convolution_relu: linear / convolution with a ReLU epilogue (epilogue.h). The
// shape rules and the input gradients are linear's and convolution's (epilogue_shared.h), given
// the output gradient masked by y > 0.
#include "athanor/ops/epilogue.h"

#include "athanor/ops/comparison.h"
#include "athanor/ops/dispatch.h"
#include "athanor/ops/pointwise.h"
#include "epilogue_shared.h"

namespace ath {

namespace {

// The gradient through the ReLU: g where the output is positive, else 0.
Tensor through_relu(BackwardContext& ctx) {
  const Tensor& g = ctx.grad_output(0);
  return mul(g, gt(ctx.output(0), 0).to(g.dtype()));
}

}  // namespace

const Op<NoAttrs>& op_linear_relu() {
  static const auto& op = define_op<NoAttrs>({
      .name = "linear_relu",
      .kind = OpKind::Opaque,
      .num_inputs = -1,
      .autocast = AutocastPolicy::LowPrecision,
      .save_inputs = 0b011,
      .save_outputs = 0b1,
      .infer = detail::linear_spec,
      .backward = [](BackwardContext& ctx,
                     const NoAttrs&) { detail::linear_backward(ctx, through_relu(ctx)); },
  });
  return op;
}

const Op<ConvAttrs>& op_convolution_relu() {
  static const auto& op = define_op<ConvAttrs>({
      .name = "convolution_relu",
      .kind = OpKind::Opaque,
      .num_inputs = -1,
      .autocast = AutocastPolicy::LowPrecision,
      .save_inputs = 0b011,
      .save_outputs = 0b1,
      .infer =
          [](TensorSpan in, const ConvAttrs& a) {
            ATH_CHECK(!a.transposed, ValueError, "a transposed convolution has no fused ReLU form");
            return detail::convolution_spec(in, a);
          },
      .backward =
          [](BackwardContext& ctx, const ConvAttrs& a) {
            detail::convolution_backward(ctx, a, through_relu(ctx));
          },
  });
  return op;
}

Tensor linear_relu(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias) {
  if (bias) return call1(op_linear_relu(), {x, weight, *bias});
  return call1(op_linear_relu(), {x, weight});
}

Tensor convolution_relu(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias,
                        const ConvAttrs& attrs) {
  if (bias) return call1(op_convolution_relu(), {x, weight, *bias}, attrs);
  return call1(op_convolution_relu(), {x, weight}, attrs);
}

}  // namespace ath
