// Argument checks shared by the loss op definitions (internal to src/ops/defs). Shape rules run
// them; kernels check the target values themselves.
#pragma once

#include "athanor/ops/losses.h"
#include "athanor/tensor/grad_mode.h"
#include "norm_grad.h"

namespace ath::detail {

// The class dim of a cross_entropy / nll_loss input: 1, or 0 for an unbatched [C] input.
inline int64_t class_dim(int64_t input_dims) { return input_dims == 1 ? 0 : 1; }

inline void check_reduction(Reduction r, bool allow_batchmean = false) {
  ATH_CHECK(r == Reduction::None || r == Reduction::Mean || r == Reduction::Sum ||
                (allow_batchmean && r == Reduction::BatchMean),
            ValueError, "{} is not a valid value for reduction", reduction_name(r));
}

// Shape of a loss output: per position for 'none', else a scalar.
inline Shape loss_shape(Reduction r, const Shape& positions) {
  return r == Reduction::None ? positions : Shape{};
}

// Checks input shape [C] / [N, C, d1, ...] (floating input when `input_dtype` is given) against a
// class-index target ([] / [N, d1, ...]); returns the target's shape (the per-position shape).
Shape check_class_target(const Shape& input, DType input_dtype, const Tensor& target);

// Checks an optional per-class weight: floating, [C], and not requiring grad (torch refuses a
// weight that requires grad for these losses: it has no gradient).
void check_class_weight(const Tensor& w, bool present, int64_t classes);

// Checks an optional elementwise weight (binary_cross_entropy*): floating, broadcastable to the
// input's shape without growing it, and not requiring grad.
void check_broadcast_weight(const Tensor& w, bool present, const char* what, const Shape& input);

// Refuses a tensor that requires grad where the loss has no gradient for it (as torch does).
inline void check_no_grad(const Tensor& t, const char* what) {
  ATH_CHECK(!(GradMode::is_enabled() && t.requires_grad()), ValueError,
            "the loss is not differentiable with respect to {}; it cannot require grad", what);
}

}  // namespace ath::detail
