// Scaled dot-product attention, composed from registered ops (matmul, masked_fill, add,
// softmax), so autograd, the tracer and the graph compiler see its parts.
//
//   // q [B, H, L, E], k [B, H, S, E], v [B, H, S, Ev] -> [B, H, L, Ev]
//   Tensor y = scaled_dot_product_attention(q, k, v, {.is_causal = true});
//   Tensor z = scaled_dot_product_attention(q, k, v, {.mask = pad_mask});  // bool: true = keep
//
// softmax(q k^T * scale + mask) v, as torch.nn.functional.scaled_dot_product_attention (2.x)
// defines it: a bool mask keeps the positions where it is true (others get -inf), a floating
// mask is added to the scores; both broadcast to [..., L, S]. is_causal keeps j <= i.
#pragma once

#include <optional>

#include "athanor/tensor/tensor.h"

namespace ath {

struct AttentionOptions {
  Tensor mask;                  // optional: bool (keep where true) or floating (added)
  bool is_causal = false;       // may not be combined with a mask, as in PyTorch
  double dropout_p = 0.0;       // dropout on the attention weights (training only)
  std::optional<double> scale;  // default 1 / sqrt(E)
};

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const AttentionOptions& options = {});

}  // namespace ath
