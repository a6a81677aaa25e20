// Scaled dot-product attention, composed from registered ops (matmul, masked_fill, add, and
// attention_softmax: the row softmax with the scale and the causal mask fused in), so autograd,
// the tracer and the graph compiler see its parts.
//
//   // q [B, H, L, E], k [B, H, S, E], v [B, H, S, Ev] -> [B, H, L, Ev]
//   Tensor q = randn({2, 4, 5, 8}), k = randn({2, 4, 6, 8}), v = randn({2, 4, 6, 3});
//   Tensor y = scaled_dot_product_attention(q, k, v, {.is_causal = true});
//   Tensor pad_mask = lt(arange(6), 4).view({1, 1, 1, 6});  // keys 4 and 5 are padding
//   Tensor z = scaled_dot_product_attention(q, k, v, {.mask = pad_mask});  // bool: true = keep
//   Tensor scores = randn({2, 4, 5, 6});
//   Tensor p = attention_softmax(scores, 0.125, /*causal=*/true);          // [..., L, S]
//   Tensor packed = randn({2, 5, 3 * 32});
//   auto qkv = split_heads(packed, /*heads=*/4, /*parts=*/3);   // [B, L, 3E] -> 3 x [B, 4, L, d]
//   assert(y.size(3) == 3 && qkv.size() == 3 && qkv[0].size(3) == 8);
//   Tensor a = self_attention(packed, 4, 0.125, /*causal=*/true);  // [2, 5, 32], all heads
//   Tensor a_ref = merge_heads({scaled_dot_product_attention(
//       qkv[0], qkv[1], qkv[2], {.is_causal = true, .scale = 0.125})});
//   assert(allclose(a, a_ref, {.rtol = 1e-4, .atol = 1e-5}));
//
// softmax(q k^T * scale + mask) v, as torch.nn.functional.scaled_dot_product_attention (2.x)
// defines it: a bool mask keeps the positions where it is true (others get -inf), a floating
// mask is added to the scores; both broadcast to [..., L, S]. is_causal keeps j <= i.
#pragma once

#include <optional>
#include <vector>

#include "athanor/ops/op.h"
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

// Multi-head attention's head split as one copy: x [d0, d1, parts * heads * d], the layout of a
// (packed) projection, [B, L, ...] with batch_first, else [L, B, ...], becomes `parts` (1 to 3:
// q, k, v) contiguous tensors [B, heads, L, d], so every batched product over the heads reads
// dense operands. merge_heads is the inverse ([B, heads, L, d] parts -> [d0, d1, parts*heads*d])
// and each is the other's backward: one pass over the data either way, no scatter into zeros.
std::vector<Tensor> split_heads(const Tensor& x, int64_t heads, int64_t parts = 1,
                                bool batch_first = true);
Tensor merge_heads(const std::vector<Tensor>& parts, bool batch_first = true);

struct HeadsAttrs {
  int64_t heads = 1;
  int64_t parts = 1;  // split_heads: how many of its 3 outputs are real (the rest are [0])
  bool batch_first = true;
  bool operator==(const HeadsAttrs&) const = default;
};
const Op<HeadsAttrs>& op_split_heads();  // (x) -> (part 0, part 1, part 2)
const Op<HeadsAttrs>& op_merge_heads();  // (part 0 [, part 1 [, part 2]]) -> merged

// Self-attention over a packed projection in one op: split_heads(x, heads, 3, batch_first), then
// softmax(q k^T * scale [causal]) v per head, then merge_heads — x [d0, d1, 3 * E] (q, k, v
// parts, as split_heads reads them) to [d0, d1, E]. Each head's scores are made, normalized and
// used while they are in cache, and q, k, v are read from x in place: no [B, H, L, L] tensor
// and no head copies are written. The inference pass "self_attention" (graph/passes.h) puts it
// where those five ops were; not bit-identical to them (its own products' summation order).
Tensor self_attention(const Tensor& x, int64_t heads, double scale, bool causal = false,
                      bool batch_first = true);

struct SelfAttentionAttrs {
  int64_t heads = 1;
  double scale = 1.0;
  bool causal = false;
  bool batch_first = true;
  bool operator==(const SelfAttentionAttrs&) const = default;
};
const Op<SelfAttentionAttrs>& op_self_attention();  // (x) -> out
// self_attention's gradient with respect to x: (dy [d0, d1, E], x) -> dx [d0, d1, 3E], in one
// kernel that recomputes each head's probabilities in cache (nothing [B, H, L, L] is saved or
// written) and skips the masked half with causal. self_attention's backward calls it for heads
// of up to kSelfAttentionFusedMaxLen positions, and the composed products above that.
const Op<SelfAttentionAttrs>& op_self_attention_backward();
inline constexpr int64_t kSelfAttentionFusedMaxLen = 1024;

// softmax over the last dim of scale * x, where with `causal` row i of each [L, S] matrix keeps
// only columns j <= i (the others get probability 0; no mask tensor is built). One pass per row:
// the attention weights of scaled_dot_product_attention and nn::MultiheadAttention.
Tensor attention_softmax(const Tensor& x, double scale = 1.0, bool causal = false);

struct AttentionSoftmaxAttrs {
  double scale = 1.0;
  bool causal = false;
  bool operator==(const AttentionSoftmaxAttrs&) const = default;
};
const Op<AttentionSoftmaxAttrs>& op_attention_softmax();
// attention_softmax_backward(g, y) = scale * y * (g - sum(g * y, -1)), y = attention_softmax(x).
// With causal, the masked columns (y = 0 there) are written as 0 without being read.
const Op<AttentionSoftmaxAttrs>& op_attention_softmax_backward();

}  // namespace ath
