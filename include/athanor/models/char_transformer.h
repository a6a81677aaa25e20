// W4 of WORKLOADS.md: a byte-level transformer language model (also a CLI built-in). Parameter
// names equal bench/e2e/torch_ref.py's CharTransformer, so weights move between the two.
//
//   models::CharTransformer lm;                   // 478,976 parameters
//   Tensor tokens = randint(0, 256, {2, 16});
//   Tensor logits = lm(tokens);                   // int64 [B, T <= 128] -> [B, T, 256]
//   assert(lm.num_parameters() == 478976);
#pragma once

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

  nn::Embedding tok, pos;
  nn::TransformerEncoder encoder;
  nn::LayerNorm norm;
  nn::Linear head;
};

}  // namespace ath::models
