// nn::MultiheadAttention: torch.nn.functional.multi_head_attention_forward (1.13) on athanor's
// ops. Heads are split and merged by single-copy ops (split_heads / merge_heads, each the
// other's backward), so the batched products over [B, H, L, d] read dense operands; the scale
// and the causal mask live in the fused attention_softmax. Self-attention over the packed
// projection with no mask but a causal one, recorded for a gradient, is one self_attention op.
#include "athanor/nn/multihead_attention.h"

#include <cmath>
#include <limits>

#include "athanor/core/error.h"
#include "athanor/nn/init.h"
#include "athanor/ops/ops.h"
#include "athanor/tensor/grad_mode.h"

namespace ath::nn {

namespace {

MultiheadAttentionOptions checked(MultiheadAttentionOptions o) {
  ATH_CHECK(o.embed_dim > 0 && o.num_heads > 0, ValueError,
            "MultiheadAttention: embed_dim and num_heads must be positive, got {} and {}",
            o.embed_dim, o.num_heads);
  ATH_CHECK(o.embed_dim % o.num_heads == 0, ValueError,
            "MultiheadAttention: embed_dim {} is not divisible by num_heads {}", o.embed_dim,
            o.num_heads);
  ATH_CHECK(o.dropout >= 0 && o.dropout <= 1, ValueError,
            "MultiheadAttention: dropout must be in [0, 1], got {}", o.dropout);
  ATH_CHECK(o.kdim.value_or(1) > 0 && o.vdim.value_or(1) > 0, ValueError,
            "MultiheadAttention: kdim and vdim must be positive");
  ATH_CHECK(!o.add_bias_kv && !o.add_zero_attn, NotImplementedError,
            "MultiheadAttention: add_bias_kv and add_zero_attn are not implemented");
  return o;
}

Tensor rows(const Tensor& t, int64_t start, int64_t count) {
  return t.defined() ? t.narrow(0, start, count) : Tensor();
}

Tensor project(const Tensor& x, const Tensor& w, const Tensor& b) {
  return b.defined() ? linear(x, w, b) : linear(x, w);
}

// attn_mask may also be uint8 (PyTorch's deprecated byte masks); key_padding_mask may not.
bool is_mask_dtype(DType t) { return t == kBool || t == kUInt8 || is_floating(t); }

// scores [B, H, L, S] with a mask broadcast onto it: bool (or uint8) masks set -inf where they
// are true, floating masks are added (converted to the scores' dtype).
Tensor apply_mask(const Tensor& scores, const Tensor& mask) {
  if (mask.dtype() == kBool || mask.dtype() == kUInt8) {
    Tensor m = mask.dtype() == kBool ? mask : ne(mask, 0);
    return masked_fill(scores, m, -std::numeric_limits<double>::infinity());
  }
  return scores + mask.to(scores.dtype());
}

}  // namespace

MultiheadAttention::MultiheadAttention(MultiheadAttentionOptions o)
    : Module("MultiheadAttention"),
      options(checked(o)),
      out_proj({.in = o.embed_dim, .out = o.embed_dim, .bias = o.bias, .dtype = o.dtype}) {
  const int64_t e = o.embed_dim, kdim = o.kdim.value_or(e), vdim = o.vdim.value_or(e);
  if (kdim == e && vdim == e) {
    in_proj_weight = register_parameter("in_proj_weight", empty({3 * e, e}, o.dtype));
  } else {
    q_proj_weight = register_parameter("q_proj_weight", empty({e, e}, o.dtype));
    k_proj_weight = register_parameter("k_proj_weight", empty({e, kdim}, o.dtype));
    v_proj_weight = register_parameter("v_proj_weight", empty({e, vdim}, o.dtype));
  }
  in_proj_bias = register_parameter("in_proj_bias", o.bias ? empty({3 * e}, o.dtype) : Tensor());
  register_module("out_proj", out_proj);
  reset_parameters();
}

void MultiheadAttention::reset_parameters() {
  out_proj.reset_parameters();
  if (packed()) {
    init::xavier_uniform_(in_proj_weight);
  } else {
    init::xavier_uniform_(q_proj_weight);
    init::xavier_uniform_(k_proj_weight);
    init::xavier_uniform_(v_proj_weight);
  }
  if (in_proj_bias.defined()) init::zeros_(in_proj_bias);
  if (out_proj.bias.defined()) init::zeros_(out_proj.bias);
}

Tensor MultiheadAttention::forward(const Tensor& x) {
  return forward(x, x, x, {.need_weights = false}).output;
}

MultiheadAttentionOutput MultiheadAttention::forward(const Tensor& query_in, const Tensor& key_in,
                                                     const Tensor& value_in,
                                                     const MultiheadAttentionArgs& args) {
  try {
    const int64_t e = options.embed_dim, heads = options.num_heads;
    const int64_t kdim = options.kdim.value_or(e), vdim = options.vdim.value_or(e);
    ATH_CHECK(query_in.dim() == 3 || query_in.dim() == 2, ShapeError,
              "query must be [L, B, E], [B, L, E] (batch_first) or [L, E], got shape {}",
              ath::to_string(query_in.shape()));
    const bool batched = query_in.dim() == 3;
    ATH_CHECK(key_in.dim() == query_in.dim() && value_in.dim() == query_in.dim(), ShapeError,
              "query, key and value must have the same number of dims, got shapes {}, {}, {}",
              ath::to_string(query_in.shape()), ath::to_string(key_in.shape()),
              ath::to_string(value_in.shape()));
    // Unbatched input runs as a batch of one in the sequence-first layout.
    const bool bf = batched && options.batch_first;
    auto batch = [&](const Tensor& t) { return batched ? t : t.unsqueeze(1); };
    const Tensor query = batch(query_in), key = batch(key_in), value = batch(value_in);
    const int64_t b = bf ? query.size(0) : query.size(1), l = bf ? query.size(1) : query.size(0);
    const int64_t bk = bf ? key.size(0) : key.size(1), s = bf ? key.size(1) : key.size(0);
    ATH_CHECK(query.size(2) == e && key.size(2) == kdim && value.size(2) == vdim, ShapeError,
              "expected feature sizes (query, key, value) = ({}, {}, {}), got shapes {}, {}, {}", e,
              kdim, vdim, ath::to_string(query_in.shape()), ath::to_string(key_in.shape()),
              ath::to_string(value_in.shape()));
    ATH_CHECK(bk == b && key.size(0) == value.size(0) && key.size(1) == value.size(1), ShapeError,
              "query, key and value disagree on batch or sequence sizes: shapes {}, {}, {}",
              ath::to_string(query_in.shape()), ath::to_string(key_in.shape()),
              ath::to_string(value_in.shape()));

    const bool self = query_in.is_same(key_in) && key_in.is_same(value_in);
    const double scale = 1.0 / std::sqrt(static_cast<double>(e / heads));

    // ---- self-attention with at most a causal mask, recorded for a gradient: one fused op ------
    // self_attention (ops/attention.h) keeps each head's scores in cache and its gradient
    // recomputes them, so no [B, H, L, L] tensor is made or saved; it stands for the path below.
    // Without grad mode (inference, ONNX export) the path below runs, and the inference graph
    // passes fuse it there.
    const bool plain = !args.attn_mask.defined() && !args.key_padding_mask.defined() &&
                       !args.need_weights && !(is_training() && options.dropout > 0);
    if (packed() && self && plain && GradMode::is_enabled()) {
      const Tensor ctx = self_attention(project(query, in_proj_weight, in_proj_bias), heads, scale,
                                        args.is_causal, bf);
      MultiheadAttentionOutput out{out_proj(ctx), Tensor()};
      if (!batched) out.output = out.output.squeeze(1);
      return out;
    }

    // ---- projections, split into contiguous heads [B, H, len, d] -----------------------------
    Tensor q, k, v;
    if (packed() && self) {  // one [*, 3E] product
      auto qkv = split_heads(project(query, in_proj_weight, in_proj_bias), heads, 3, bf);
      q = qkv[0], k = qkv[1], v = qkv[2];
    } else if (packed() && key_in.is_same(value_in)) {  // encoder-decoder: q, then packed kv
      q = split_heads(project(query, rows(in_proj_weight, 0, e), rows(in_proj_bias, 0, e)), heads,
                      1, bf)[0];
      auto kv = split_heads(
          project(key, rows(in_proj_weight, e, 2 * e), rows(in_proj_bias, e, 2 * e)), heads, 2, bf);
      k = kv[0], v = kv[1];
    } else {
      const Tensor wq = packed() ? rows(in_proj_weight, 0, e) : q_proj_weight;
      const Tensor wk = packed() ? rows(in_proj_weight, e, e) : k_proj_weight;
      const Tensor wv = packed() ? rows(in_proj_weight, 2 * e, e) : v_proj_weight;
      auto one = [&](const Tensor& x, const Tensor& w, int64_t part) {
        return split_heads(project(x, w, rows(in_proj_bias, part * e, e)), heads, 1, bf)[0];
      };
      q = one(query, wq, 0), k = one(key, wk, 1), v = one(value, wv, 2);
    }

    // ---- weights = softmax(q k^T / sqrt(d) + masks) ----------------------------------------
    Tensor weights;
    if (!args.attn_mask.defined() && !args.key_padding_mask.defined()) {
      weights = attention_softmax(matmul(q, k.mT()), scale, args.is_causal);
    } else {
      Tensor scores = matmul(q * scale, k.mT());  // q scaled first, as PyTorch does
      if (const Tensor& m = args.attn_mask; m.defined()) {
        ATH_CHECK(is_mask_dtype(m.dtype()), DTypeError,
                  "attn_mask must be bool, uint8 or floating, got {}", dtype_name(m.dtype()));
        if (m.dim() == 2) {
          ATH_CHECK(m.shape() == (Shape{l, s}), ShapeError,
                    "the 2-D attn_mask must be [L, S] = [{}, {}], got shape {}", l, s,
                    ath::to_string(m.shape()));
          scores = apply_mask(scores, m);
        } else {
          ATH_CHECK(m.dim() == 3 && m.shape() == (Shape{b * heads, l, s}), ShapeError,
                    "attn_mask must be [L, S] = [{}, {}] or [B * num_heads, L, S] = [{}, {}, {}], "
                    "got shape {}",
                    l, s, b * heads, l, s, ath::to_string(m.shape()));
          scores = apply_mask(scores, m.reshape({b, heads, l, s}));
        }
      }
      if (const Tensor& m = args.key_padding_mask; m.defined()) {
        ATH_CHECK(m.dtype() == kBool || is_floating(m.dtype()), DTypeError,
                  "key_padding_mask must be bool or floating, got {}", dtype_name(m.dtype()));
        const Shape want = batched ? Shape{b, s} : Shape{s};
        ATH_CHECK(m.shape() == want, ShapeError, "key_padding_mask must be {}, got shape {}",
                  ath::to_string(want), ath::to_string(m.shape()));
        scores = apply_mask(scores, m.reshape({b, 1, 1, s}));
      }
      weights = attention_softmax(scores, 1.0, args.is_causal);
    }
    if (is_training() && options.dropout > 0) weights = dropout(weights, options.dropout, true);

    // ---- output = merge_heads(weights v) W_o^T + b_o ----------------------------------------
    Tensor ctx = merge_heads({matmul(weights, v)}, bf);  // [B, H, L, d] -> [B, L, E] / [L, B, E]
    MultiheadAttentionOutput out{out_proj(ctx), Tensor()};
    if (args.need_weights) out.weights = args.average_attn_weights ? weights.mean({1}) : weights;
    if (!batched) {
      out.output = out.output.squeeze(1);
      if (out.weights.defined()) out.weights = out.weights.squeeze(0);
    }
    return out;
  } catch (Error& err) {
    err.prepend("MultiheadAttention: ");
    throw;
  }
}

}  // namespace ath::nn
