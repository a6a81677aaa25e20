// scaled_dot_product_attention as a composition of registered ops.
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
    const int64_t e = q.size(-1), l = q.size(-2), s = k.size(-2);
    ATH_CHECK(k.size(-1) == e, ShapeError, "q's last dim {} differs from k's {} (q {}, k {})", e,
              k.size(-1), to_string(q.shape()), to_string(k.shape()));
    ATH_CHECK(v.size(-2) == s, ShapeError, "k has {} keys but v has {} values (k {}, v {})", s,
              v.size(-2), to_string(k.shape()), to_string(v.shape()));
    ATH_CHECK(!(o.is_causal && o.mask.defined()), ValueError,
              "is_causal and an explicit mask cannot be combined");
    ATH_CHECK(o.dropout_p >= 0 && o.dropout_p < 1, ValueError,
              "dropout_p must be in [0, 1), got {}", o.dropout_p);
    const double scale = o.scale.value_or(1.0 / std::sqrt(static_cast<double>(e)));
    Tensor scores = matmul(q, k.transpose(-2, -1)) * scale;  // [..., L, S]
    const double neg_inf = -std::numeric_limits<double>::infinity();
    if (o.is_causal) {
      Tensor keep = tril(ones({l, s}, kBool));
      scores = masked_fill(scores, logical_not(keep), neg_inf);
    } else if (o.mask.defined()) {
      if (o.mask.dtype() == kBool) {
        scores = masked_fill(scores, logical_not(o.mask), neg_inf);
      } else {
        ATH_CHECK(is_floating(o.mask.dtype()), DTypeError, "mask must be bool or floating, got {}",
                  dtype_name(o.mask.dtype()));
        scores = scores + o.mask;
      }
    }
    Tensor weights = softmax(scores, -1);
    if (o.dropout_p > 0) weights = dropout(weights, o.dropout_p, true);
    return matmul(weights, v);
  } catch (Error& e) {
    e.prepend("scaled_dot_product_attention: ");
    throw;
  }
}

}  // namespace ath
