// nn::MultiheadAttention: PyTorch's torch.nn.MultiheadAttention (1.13 semantics, parameter
// names and default initialisation), plus a causal flag.
//
//   nn::MultiheadAttention mha({.embed_dim = 128, .num_heads = 4, .batch_first = true});
//   Tensor x = randn({2, 5, 128});
//   auto [y, w] = mha(x, x, x);                       // y [B, L, 128], w [B, L, L] (head mean)
//   Tensor z = mha(x, x, x, {.need_weights = false, .is_causal = true}).output;
//   Tensor q = randn({2, 5, 128}), k = randn({2, 7, 128}), v = randn({2, 7, 128});
//   Tensor pad = ge(arange(7), 5).expand({2, 7});     // the last two keys are padding
//   Tensor p = mha(q, k, v, {.key_padding_mask = pad}).output;   // pad bool [B, S], true = ignore
//
// Parameters: in_proj_weight [3E, E] (xavier_uniform_) and in_proj_bias [3E] (zeros), or, when
// kdim or vdim differ from E, q_proj_weight [E, E], k_proj_weight [E, kdim], v_proj_weight
// [E, vdim]; out_proj (an nn::Linear submodule: Linear's default weight init, zero bias).
//
// The attention runs as one packed QKV product (self-attention), head splits as strided views,
// batched matrix products over [B, H, L, d], and attention_softmax (the softmax with the
// 1/sqrt(d) scale and the causal mask fused in: no [L, S] mask is built for is_causal). Masks:
// attn_mask [L, S] or [B * num_heads, L, S], key_padding_mask [B, S]; bool masks mark the
// positions NOT attended to (true = masked, as in PyTorch, unlike scaled_dot_product_attention's
// keep-masks), floating masks are added to the scores. Dropout (training only) applies to the
// attention weights, which are also what need_weights returns (as PyTorch 1.13 does).
#pragma once

#include <optional>

#include "athanor/nn/linear.h"
#include "athanor/nn/module.h"

namespace ath::nn {

struct MultiheadAttentionOptions {
  int64_t embed_dim = 0;
  int64_t num_heads = 1;
  double dropout = 0.0;               // on the attention weights, training only
  bool bias = true;                   // in_proj_bias and out_proj.bias
  bool add_bias_kv = false;           // not implemented (NotImplementedError)
  bool add_zero_attn = false;         // not implemented (NotImplementedError)
  std::optional<int64_t> kdim, vdim;  // key / value feature sizes; default embed_dim
  bool batch_first = false;           // [B, L, E] instead of [L, B, E]
  DType dtype = kFloat32;
};

// forward()'s arguments besides query, key and value (PyTorch's keywords, plus is_causal).
struct MultiheadAttentionArgs {
  Tensor key_padding_mask;  // [B, S] (or [S] unbatched): bool (true = ignore) or float (added)
  bool need_weights = true;
  Tensor attn_mask;  // [L, S] or [B * num_heads, L, S]: bool (true = masked) or float (added)
  bool average_attn_weights = true;  // weights [B, L, S] (mean over heads) or [B, H, L, S]
  bool is_causal = false;  // query i attends to keys j <= i only (with attn_mask too, if given)
};

struct MultiheadAttentionOutput {
  Tensor output;   // [L, B, E] or [B, L, E] (batch_first); [L, E] unbatched
  Tensor weights;  // undefined unless need_weights
};

class MultiheadAttention : public Module {
 public:
  explicit MultiheadAttention(MultiheadAttentionOptions options);

  // query [L, B, E] ([B, L, E] with batch_first; [L, E] unbatched), key [S, B, kdim],
  // value [S, B, vdim]. Errors name the layer.
  MultiheadAttentionOutput forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                   const MultiheadAttentionArgs& args = {});
  MultiheadAttentionOutput operator()(const Tensor& query, const Tensor& key, const Tensor& value,
                                      const MultiheadAttentionArgs& args = {}) {
    MultiheadAttentionOutput out = forward(query, key, value, args);
    run_forward_hooks(query, out.output);  // as PyTorch's hooks see this call
    return out;
  }
  // Self-attention without masks, returning the output only.
  Tensor forward(const Tensor& x) override;
  using Module::operator();

  // Re-draws the parameters from PyTorch's default distributions.
  void reset_parameters();

  int64_t head_dim() const { return options.embed_dim / options.num_heads; }
  bool packed() const { return !q_proj_weight.defined(); }  // PyTorch's _qkv_same_embed_dim

  MultiheadAttentionOptions options;
  Tensor in_proj_weight;                               // [3E, E] when packed
  Tensor q_proj_weight, k_proj_weight, v_proj_weight;  // when kdim or vdim differ from E
  Tensor in_proj_bias;                                 // [3E], when options.bias
  Linear out_proj;
};

}  // namespace ath::nn
