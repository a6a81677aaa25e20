// Shape-rule helpers shared by the reduction family's definitions (internal).
#pragma once

#include <algorithm>
#include <string_view>

#include "athanor/ops/reduction.h"
#include "athanor/tensor/grad_mode.h"

namespace ath::detail {

// `dims` (normalized) spelled out: every dim when empty.
inline DimList explicit_dims(const DimList& dims, int64_t ndim) {
  if (!dims.empty()) return dims;
  DimList all;
  for (int64_t d = 0; d < ndim; ++d) all.push_back(d);
  return all;
}

// Attributes are normalized by the public functions; ops called directly (tracer, importers)
// are checked here so a bad dim never reaches a kernel.
inline void check_dims_in_range(const DimList& dims, int64_t ndim) {
  for (int64_t d : dims) {
    ATH_CHECK(d >= 0 && d < std::max<int64_t>(ndim, 1), IndexError,
              "dimension {} out of range for a {}-D tensor (attributes must be normalized)", d,
              ndim);
  }
}

// Reductions without an identity (max, min, argmax, the inf-norms) refuse empty reduced dims,
// with PyTorch's messages.
inline void check_nonempty_reduction(const Shape& in, const DimList& dims) {
  if (dims.empty()) {
    ATH_CHECK(numel(in) != 0, IndexError,
              "Expected reduction dim to be specified for input.numel() == 0 (the operation has "
              "no identity)");
    return;
  }
  for (int64_t d : dims) {
    ATH_CHECK(in[static_cast<std::size_t>(d)] != 0, IndexError,
              "Expected reduction dim {} to have non-zero size (the operation has no identity)", d);
  }
}

// The dtype integer-to-float reductions refuse (mean, var, std, norm) unless asked for.
inline void check_floating(DType t, std::string_view what) {
  ATH_CHECK(is_floating(t), DTypeError, "{} needs a floating input, got {}", what, dtype_name(t));
}

// Output i of the op, for its backward formula. The dispatcher saves outputs without their
// history (saving an output in its own node would be a reference cycle), so when the backward
// pass is itself recorded (create_graph) the output is recomputed from the saved inputs: the
// second derivative then also flows through it.
template <class Recompute>
Tensor output_for_backward(const BackwardContext& ctx, int i, const Recompute& recompute) {
  return GradMode::is_enabled() ? recompute() : ctx.output(i);
}

}  // namespace ath::detail
