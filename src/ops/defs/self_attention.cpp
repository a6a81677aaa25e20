// self_attention: split_heads -> softmax(q k^T * scale [causal]) v -> merge_heads as one op over
// a packed projection (attention.h). Its gradient is one self_attention_backward kernel for heads
// of up to kSelfAttentionFusedMaxLen positions (its scratch holds a head's [L, L] probabilities);
// longer heads, and second derivatives, use the ops it stands for: the heads split again, the
// probabilities recomputed, and the three part gradients merged the way split_heads' gradient is.
#include <cmath>

#include "athanor/ops/attention.h"
#include "athanor/ops/dispatch.h"
#include "athanor/ops/linalg.h"
#include "athanor/tensor/grad_mode.h"

namespace ath {

namespace {

OutputSpec self_attention_spec(TensorSpan in, const SelfAttentionAttrs& a) {
  const Tensor& x = in[0];
  ATH_CHECK(a.heads >= 1, ValueError, "heads must be at least 1, got {}", a.heads);
  ATH_CHECK(std::isfinite(a.scale), ValueError, "scale must be finite, got {}", a.scale);
  ATH_CHECK(x.dim() == 3, ShapeError,
            "expected a packed projection [d0, d1, 3 * heads * d], got shape {}",
            to_string(x.shape()));
  ATH_CHECK(x.size(2) % (3 * a.heads) == 0, ShapeError,
            "features {} do not split into q, k, v of {} heads (shape {})", x.size(2), a.heads,
            to_string(x.shape()));
  ATH_CHECK(is_floating(x.dtype()), DTypeError, "expected a floating projection, got {}",
            dtype_name(x.dtype()));
  return OutputSpec{{{Shape{x.size(0), x.size(1), x.size(2) / 3}, x.dtype()}}, x.dtype()};
}

OutputSpec self_attention_backward_spec(TensorSpan in, const SelfAttentionAttrs& a) {
  const Tensor& dy = in[0];
  const Tensor& x = in[1];
  self_attention_spec(in.subspan(1), a);
  ATH_CHECK(dy.dtype() == x.dtype(), DTypeError,
            "the output gradient is {} but the projection is {}", dtype_name(dy.dtype()),
            dtype_name(x.dtype()));
  const Shape want{x.size(0), x.size(1), x.size(2) / 3};
  ATH_CHECK(dy.shape() == want, ShapeError,
            "the output gradient must be {} for a projection of shape {}, got shape {}",
            to_string(want), to_string(x.shape()), to_string(dy.shape()));
  return OutputSpec{{{x.shape(), x.dtype()}}, x.dtype()};
}

}  // namespace

const Op<SelfAttentionAttrs>& op_self_attention_backward() {
  static const auto& op = define_op<SelfAttentionAttrs>({
      .name = "self_attention_backward",
      .kind = OpKind::Opaque,
      .num_inputs = 2,
      .infer = self_attention_backward_spec,
      .not_differentiable = "a fused first-order gradient; under create_graph self_attention's "
                            "backward composes differentiable ops instead",
  });
  return op;
}

const Op<SelfAttentionAttrs>& op_self_attention() {
  static const auto& op = define_op<SelfAttentionAttrs>({
      .name = "self_attention",
      .kind = OpKind::Opaque,
      .autocast = AutocastPolicy::Float32,
      .save_inputs = 0b1,
      .infer = self_attention_spec,
      .backward =
          [](BackwardContext& ctx, const SelfAttentionAttrs& a) {
            const Tensor& x = ctx.input(0);
            const int64_t len = x.size(a.batch_first ? 1 : 0);
            if (len <= kSelfAttentionFusedMaxLen && !GradMode::is_enabled()) {
              ctx.set_grad_input(0,
                                 call1(op_self_attention_backward(), {ctx.grad_output(0), x}, a));
              return;
            }
            const std::vector<Tensor> qkv = split_heads(x, a.heads, 3, a.batch_first);
            const Tensor& q = qkv[0];
            const Tensor& k = qkv[1];
            const Tensor& v = qkv[2];
            const AttentionSoftmaxAttrs sa{.scale = a.scale, .causal = a.causal};
            const Tensor p = attention_softmax(matmul(q, k.mT()), a.scale, a.causal);
            const Tensor go = split_heads(ctx.grad_output(0), a.heads, 1, a.batch_first)[0];
            const Tensor dv = matmul(p.mT(), go);
            // ds: the gradient of the unscaled scores (attention_softmax_backward applies the
            // scale), masked entries 0.
            const Tensor ds = call1(op_attention_softmax_backward(), {matmul(go, v.mT()), p}, sa);
            ctx.set_grad_input(0,
                               merge_heads({matmul(ds, k), matmul(ds.mT(), q), dv}, a.batch_first));
          },
  });
  return op;
}

Tensor self_attention(const Tensor& x, int64_t heads, double scale, bool causal, bool batch_first) {
  return call1(op_self_attention(), {x},
               SelfAttentionAttrs{
                   .heads = heads, .scale = scale, .causal = causal, .batch_first = batch_first});
}

}  // namespace ath
