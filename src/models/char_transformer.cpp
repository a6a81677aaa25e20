#include "athanor/models/char_transformer.h"

#include <cmath>

#include "athanor/core/error.h"
#include "athanor/ops/creation.h"
#include "athanor/ops/ops.h"

namespace ath::models {

CharTransformer::CharTransformer()
    : Module("CharTransformer"),
      tok({.num = 256, .dim = 128}),
      pos({.num = kContext, .dim = 128}),
      encoder({.layer = {.d_model = 128,
                         .nhead = 4,
                         .dim_feedforward = 512,
                         .dropout = 0.0,
                         .activation = "gelu",
                         .batch_first = true,
                         .norm_first = true},
               .num_layers = 2}),
      norm({.shape = {128}}),
      head({.in = 128, .out = 256}) {
  register_module("tok", tok);
  register_module("pos", pos);
  register_module("encoder", encoder);
  register_module("norm", norm);
  register_module("head", head);
}

Tensor CharTransformer::forward(const Tensor& tokens) {
  ATH_CHECK(tokens.dim() == 2 && tokens.size(1) <= kContext, ShapeError,
            "CharTransformer: expected tokens [B, T <= {}], got {}", kContext,
            ath::to_string(tokens.shape()));
  Tensor h = tok(tokens) + pos(arange(tokens.size(1)));
  return head(norm(encoder(h, {.is_causal = true})));
}

std::vector<Tensor> CharTransformer::empty_cache(int64_t batch) const {
  const auto& l = encoder.layer(0).options;
  std::vector<Tensor> cache;
  for (std::size_t i = 0; i < 2 * encoder.num_layers(); ++i) {
    cache.push_back(zeros({batch, l.nhead, 0, l.d_model / l.nhead}));
  }
  return cache;
}

// The encoder layers' pre-norm forward for one position, attending over the cached keys and
// values (the causal mask is implicit: the cache holds only earlier positions).
Tensor CharTransformer::step(const Tensor& last, std::vector<Tensor>& cache) {
  ATH_CHECK(last.dim() == 1 && cache.size() == 2 * encoder.num_layers(), ShapeError,
            "CharTransformer::step: expected tokens [B] and {} cache tensors, got {} and {}",
            2 * encoder.num_layers(), ath::to_string(last.shape()), cache.size());
  const int64_t b = last.size(0), p = cache[0].size(2);
  ATH_CHECK(p < kContext && cache[0].size(0) == b, ShapeError,
            "CharTransformer::step: position {} of a {}-position context, cache batch {} for {} "
            "tokens",
            p, kContext, cache[0].size(0), b);
  Tensor x = tok(last) + pos(full({1}, p)).squeeze(0);  // [B, E]
  for (std::size_t i = 0; i < encoder.num_layers(); ++i) {
    nn::TransformerEncoderLayer& l = encoder.layer(i);
    const int64_t e = l.options.d_model, heads = l.options.nhead, hd = e / heads;
    auto split_heads = [&](const Tensor& t) { return t.reshape({b, heads, 1, hd}); };
    const std::vector<Tensor> qkv =
        chunk(linear(l.norm1(x), l.self_attn.in_proj_weight, l.self_attn.in_proj_bias), 3, 1);
    Tensor& keys = cache[2 * i];
    Tensor& values = cache[2 * i + 1];
    keys = cat({keys, split_heads(qkv[1])}, 2);
    values = cat({values, split_heads(qkv[2])}, 2);
    Tensor scores = matmul(split_heads(qkv[0]), keys.transpose(2, 3)) * (1.0 / std::sqrt(hd));
    Tensor attended = matmul(softmax(scores, 3), values).reshape({b, e});
    x = x + l.self_attn.out_proj(attended);
    Tensor h = l.linear1(l.norm2(x));
    x = x + l.linear2(l.options.activation == "gelu" ? gelu(h) : relu(h));
  }
  return head(norm(x));
}

}  // namespace ath::models
