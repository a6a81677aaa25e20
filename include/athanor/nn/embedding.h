// nn::Embedding: a lookup table of `num` vectors of size `dim`, initialised N(0, 1) with the
// padding_idx row zeroed (and kept out of the gradient), as in PyTorch.
//
//   nn::Embedding emb({.num = 256, .dim = 64});
//   Tensor tokens = randint(0, 256, {2, 10});
//   Tensor h = emb(tokens);                 // int64 [B, T] -> [B, T, 64]
#pragma once

#include <optional>

#include "athanor/nn/module.h"

namespace ath::nn {

struct EmbeddingOptions {
  int64_t num = 0;  // PyTorch's num_embeddings
  int64_t dim = 0;  // embedding_dim
  std::optional<int64_t> padding_idx;
  DType dtype = kFloat32;
};

class Embedding : public Module {
 public:
  explicit Embedding(EmbeddingOptions options);
  Tensor forward(const Tensor& indices) override;
  std::string extra_repr() const override;

  EmbeddingOptions options;
  Tensor weight;  // [num, dim]
};

}  // namespace ath::nn
