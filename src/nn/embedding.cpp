#include "athanor/nn/embedding.h"

#include "athanor/core/error.h"
#include "athanor/nn/init.h"
#include "athanor/ops/ops.h"
#include "athanor/tensor/grad_mode.h"

namespace ath::nn {

Embedding::Embedding(EmbeddingOptions o) : Module("Embedding"), options(o) {
  ATH_CHECK(o.num >= 0 && o.dim >= 0, ValueError,
            "Embedding: num and dim must be non-negative, got num={} dim={}", o.num, o.dim);
  if (o.padding_idx) {
    ATH_CHECK(*o.padding_idx >= -o.num && *o.padding_idx < o.num, IndexError,
              "Embedding: padding_idx {} out of range for {} embeddings", *o.padding_idx, o.num);
    if (*o.padding_idx < 0) options.padding_idx = *o.padding_idx + o.num;
  }
  weight = register_parameter("weight", empty({o.num, o.dim}, o.dtype));
  init::normal_(weight);
  if (options.padding_idx) {
    NoGradGuard no_grad;
    weight.select(0, *options.padding_idx).zero_();
  }
}

Tensor Embedding::forward(const Tensor& indices) {
  return embedding(weight, indices, options.padding_idx);
}

std::string Embedding::extra_repr() const {
  std::string s = fmt::format("{}, {}", options.num, options.dim);
  if (options.padding_idx) s += fmt::format(", padding_idx={}", *options.padding_idx);
  return s;
}

}  // namespace ath::nn
