#include "athanor/optim/clip_grad.h"

#include <cmath>

#include "athanor/core/error.h"
#include "athanor/ops/creation.h"
#include "athanor/ops/dispatch.h"
#include "athanor/ops/optimizer_updates.h"
#include "athanor/ops/pointwise.h"
#include "athanor/tensor/grad_mode.h"

namespace ath::optim {

namespace {

std::vector<Tensor> gradients_of(const std::vector<Tensor>& params) {
  std::vector<Tensor> grads;
  for (const Tensor& p : params) {
    if (!p.defined()) continue;
    Tensor g = p.grad();
    if (g.defined()) grads.push_back(g);
  }
  return grads;
}

}  // namespace

Tensor clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  ATH_CHECK(norm_type > 0, ValueError, "clip_grad_norm_: norm_type must be > 0 or INFINITY, got {}",
            norm_type);
  NoGradGuard no_grad;
  std::vector<Tensor> grads = gradients_of(params);
  if (grads.empty()) return zeros({});
  Tensor total = call1(op_grad_norm(), TensorSpan(grads), GradNormAttrs{.norm_type = norm_type});
  // The one host read, and only when asked for (as in PyTorch).
  ATH_CHECK(!error_if_nonfinite || std::isfinite(total.item<double>()), ValueError,
            "clip_grad_norm_: the total norm of order {} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the gradients "
            "by the non-finite norm anyway, set error_if_nonfinite=false",
            norm_type);
  grads.insert(grads.begin(), total);
  call(op_clip_grads_by_norm(), TensorSpan(grads), ClipByNormAttrs{.max_norm = max_norm});
  return total;
}

void clip_grad_value_(const std::vector<Tensor>& params, double clip_value) {
  NoGradGuard no_grad;
  for (Tensor& g : gradients_of(params)) {
    const Tensor in[1] = {g};
    call_inplace(op_clamp(), g, TensorSpan(in), ClampAttrs{.min = -clip_value, .max = clip_value});
  }
}

}  // namespace ath::optim
