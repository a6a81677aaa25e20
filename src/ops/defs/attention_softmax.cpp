// attention_softmax and its backward op: the row softmax of attention scores with the
// 1/sqrt(d) scale and the causal mask fused in, so the attention path neither scales the
// [.., L, S] scores in a separate pass nor materializes an [L, S] mask.
#include <cmath>

#include "athanor/ops/attention.h"
#include "athanor/ops/dispatch.h"
#include "athanor/ops/pointwise.h"
#include "athanor/ops/reduction.h"
#include "athanor/ops/shaping.h"

namespace ath {

namespace {

void check_attrs(const Tensor& x, const AttentionSoftmaxAttrs& a) {
  ATH_CHECK(x.dim() >= (a.causal ? 2 : 1), ShapeError,
            "expected scores of at least {} dims ([..., L, S]), got shape {}", a.causal ? 2 : 1,
            to_string(x.shape()));
  ATH_CHECK(std::isfinite(a.scale), ValueError, "scale must be finite, got {}", a.scale);
}

OutputSpec attention_softmax_spec(TensorSpan in, const AttentionSoftmaxAttrs& a) {
  check_attrs(in[0], a);
  DType t = in[0].dtype();
  ATH_CHECK(is_floating(t), DTypeError, "expected floating scores, got {} (shape {})",
            dtype_name(t), to_string(in[0].shape()));
  return OutputSpec{{{in[0].shape(), t}}, t};
}

// Inputs (g, y) of one shape.
OutputSpec attention_softmax_backward_spec(TensorSpan in, const AttentionSoftmaxAttrs& a) {
  ATH_CHECK(in[0].shape() == in[1].shape(), ShapeError,
            "grad shape {} doesn't match the output shape {}", to_string(in[0].shape()),
            to_string(in[1].shape()));
  check_attrs(in[0], a);
  DType t = promote_types(in[0].dtype(), in[1].dtype());
  ATH_CHECK(is_floating(t), DTypeError, "expected floating inputs, got {} and {}",
            dtype_name(in[0].dtype()), dtype_name(in[1].dtype()));
  return OutputSpec{{{in[0].shape(), t}}, t};
}

Tensor row_sum(const Tensor& t) { return sum(t, {-1}, /*keepdim=*/true); }

}  // namespace

const Op<AttentionSoftmaxAttrs>& op_attention_softmax() {
  static const auto& op = define_op<AttentionSoftmaxAttrs>({
      .name = "attention_softmax",
      .kind = OpKind::Opaque,
      .inplace = InplacePolicy::OverInput0,  // a row is read whole before it is written
      .autocast = AutocastPolicy::Float32,
      .save_outputs = 0b1,
      .infer = attention_softmax_spec,
      .backward =
          [](BackwardContext& ctx, const AttentionSoftmaxAttrs& a) {
            ctx.set_grad_input(
                0, call1(op_attention_softmax_backward(), {ctx.grad_output(0), ctx.output(0)}, a));
          },
  });
  return op;
}

const Op<AttentionSoftmaxAttrs>& op_attention_softmax_backward() {
  static const auto& op = define_op<AttentionSoftmaxAttrs>({
      .name = "attention_softmax_backward",
      .kind = OpKind::Opaque,
      .num_inputs = 2,
      .inplace = InplacePolicy::OverInput0,  // a row is read whole before it is written
      .save_inputs = 0b11,
      .infer = attention_softmax_backward_spec,
      .backward =
          [](BackwardContext& ctx, const AttentionSoftmaxAttrs& a) {
            // out = c * scale * y * (g - s), s = sum(c * g * y), c the causal keep pattern (1
            // where j <= i; all ones without causal). Linear in g with the forward's Jacobian (so
            // d/dg is this op again); d/dy = c * scale * (h * (g - s) - g * sum(c * h * y)).
            const Tensor& h = ctx.grad_output(0);
            const Tensor& g = ctx.input(0);
            const Tensor& y = ctx.input(1);
            if (ctx.needs_grad(0)) {
              ctx.set_grad_input(0, call1(op_attention_softmax_backward(), {h, y}, a));
            }
            if (ctx.needs_grad(1)) {
              Tensor hc = a.causal ? tril(h) : h;
              Tensor s = row_sum((a.causal ? tril(g) : g) * y);
              Tensor gy = (hc * (g - s) - g * row_sum(hc * y)) * a.scale;
              ctx.set_grad_input(1, a.causal ? tril(gy) : gy);
            }
          },
  });
  return op;
}

Tensor attention_softmax(const Tensor& x, double scale, bool causal) {
  return call1(op_attention_softmax(), {x},
               AttentionSoftmaxAttrs{.scale = scale, .causal = causal});
}

}  // namespace ath
