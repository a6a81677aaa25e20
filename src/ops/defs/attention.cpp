// scaled_dot_product_attention as a composition of registered ops (attention_softmax, the fused
// scaled and causal row softmax, is defined in attention_softmax.cpp).
#include "athanor/ops/attention.h"

#include <cmath>
#include <limits>

#include "athanor/ops/ops.h"

namespace ath {

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const AttentionOptions& o) {
  try {
    ATH_CHECK(q.dim() >= 2 && k.dim() >= 2 && v.dim() >= 2, ShapeError,
              "q, k, v need >= 2 dims, got {}, {}, {}", to_string(q.shape()), to_string(k.shape()),
              to_string(v.shape()));
    const int64_t e = q.size(-1), s = k.size(-2);
    ATH_CHECK(k.size(-1) == e, ShapeError, "q's last dim {} differs from k's {} (q {}, k {})", e,
              k.size(-1), to_string(q.shape()), to_string(k.shape()));
    ATH_CHECK(v.size(-2) == s, ShapeError, "k has {} keys but v has {} values (k {}, v {})", s,
              v.size(-2), to_string(k.shape()), to_string(v.shape()));
    ATH_CHECK(!(o.is_causal && o.mask.defined()), ValueError,
              "is_causal and an explicit mask cannot be combined");
    ATH_CHECK(o.dropout_p >= 0 && o.dropout_p < 1, ValueError,
              "dropout_p must be in [0, 1), got {}", o.dropout_p);
    const double scale = o.scale.value_or(1.0 / std::sqrt(static_cast<double>(e)));
    Tensor scores = matmul(q, k.transpose(-2, -1));  // [..., L, S]
    Tensor weights;
    if (!o.mask.defined()) {
      // The scale and the causal mask are fused into the softmax: no extra pass, no [L, S] mask.
      weights = attention_softmax(scores, scale, o.is_causal);
    } else {
      scores = scores * scale;
      if (o.mask.dtype() == kBool) {
        scores = masked_fill(scores, logical_not(o.mask), -std::numeric_limits<double>::infinity());
      } else {
        ATH_CHECK(is_floating(o.mask.dtype()), DTypeError, "mask must be bool or floating, got {}",
                  dtype_name(o.mask.dtype()));
        scores = scores + o.mask;
      }
      weights = attention_softmax(scores);
    }
    if (o.dropout_p > 0) weights = dropout(weights, o.dropout_p, true);
    return matmul(weights, v);
  } catch (Error& e) {
    e.prepend("scaled_dot_product_attention: ");
    throw;
  }
}

}  // namespace ath
