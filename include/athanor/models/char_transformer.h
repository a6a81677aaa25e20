// W4 of WORKLOADS.md: a byte-level transformer language model (also a CLI built-in). Parameter
// names equal bench/e2e/torch_ref.py's CharTransformer, so weights move between the two.
//
//   models::CharTransformer lm;                   // 478,976 parameters
//   Tensor tokens = randint(0, 256, {2, 16});
//   Tensor logits = lm(tokens);                   // int64 [B, T <= 128] -> [B, T, 256]
//   assert(lm.num_parameters() == 478976);
//
//   // Incremental decoding with a key-value cache: one new token per call, the same logits as
//   // re-running the whole prefix (within float rounding), in O(T) instead of O(T^2) per token.
//   std::vector<Tensor> cache = lm.empty_cache(2);
//   Tensor next = lm.step(tokens.select(1, 0), cache);   // [B] -> [B, 256]; cache grows by one
//   assert(next.shape() == Shape({2, 256}) && cache[0].size(2) == 1);
#pragma once

#include <vector>

#include "athanor/nn/embedding.h"
#include "athanor/nn/linear.h"
#include "athanor/nn/normalization.h"
#include "athanor/nn/transformer.h"

namespace ath::models {

// Token + position embeddings (128-d, context 128), 2 pre-LayerNorm encoder blocks (4 heads,
// feed-forward 512, GELU, no dropout, causal attention), a final LayerNorm, Linear(128, 256).
class CharTransformer : public nn::Module {
 public:
  static constexpr int64_t kContext = 128;
  CharTransformer();
  Tensor forward(const Tensor& tokens) override;

  // The key-value cache of `batch` empty sequences: per encoder layer, keys and values
  // [batch, heads, positions, head_dim] (batch on dim 0, as seq::beam_search reorders state).
  std::vector<Tensor> empty_cache(int64_t batch) const;
  // Logits [B, 256] of the token after `last` (int64 [B]), which sits at position
  // cache[0].size(2); appends its keys and values to the cache. Up to kContext positions.
  Tensor step(const Tensor& last, std::vector<Tensor>& cache);

  nn::Embedding tok, pos;
  nn::TransformerEncoder encoder;
  nn::LayerNorm norm;
  nn::Linear head;
};

}  // namespace ath::models
