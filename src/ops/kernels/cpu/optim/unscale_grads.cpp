// CPU kernel of unscale_grads (athanor/ops/optimizer_updates.h), what optim::GradScaler::unscale_
// runs: one pass over each gradient that multiplies it by inv_scale and notes any inf or NaN.
// Memory contract: reads inv_scale, reads and writes each gradient in place (any layout:
// contiguous ones directly, others through a contiguous copy written back), writes found_inf
// only to set it to 1.
#include <atomic>
#include <cmath>

#include "athanor/core/half.h"
#include "athanor/core/parallel.h"
#include "athanor/ops/copy.h"
#include "athanor/ops/dispatch.h"
#include "athanor/ops/optimizer_updates.h"

namespace ath::optim_kernels {

namespace {

// Scales x[0, n) by inv in the element's arithmetic type (float, or double for double) and
// returns whether any element was not finite. PyTorch's kernel multiplies only when inv != 1.
template <class T>
bool unscale(T* x, int64_t n, float inv) {
  using Math = std::conditional_t<std::is_same_v<T, double>, double, float>;
  std::atomic<bool> found{false};
  parallel_for(0, n, kPointwiseGrain, [&](int64_t b, int64_t e) {
    bool bad = false;
    for (int64_t i = b; i < e; ++i) {
      const Math v = static_cast<Math>(x[i]);
      bad |= !std::isfinite(v);
      if (inv != 1.0f) x[i] = static_cast<T>(v * static_cast<Math>(inv));
    }
    if (bad) found.store(true, std::memory_order_relaxed);
  });
  return found.load();
}

bool unscale_any(Tensor& g, float inv) {
  switch (g.dtype()) {
    case kFloat32:
      return unscale(g.data<float>(), g.numel(), inv);
    case kFloat64:
      return unscale(g.data<double>(), g.numel(), inv);
    case kBFloat16:
      return unscale(g.data<BFloat16>(), g.numel(), inv);
    case kFloat16:
      return unscale(g.data<Half>(), g.numel(), inv);
    default:
      ATH_CHECK(false, DTypeError, "gradient dtype {}", dtype_name(g.dtype()));
  }
  return false;
}

void unscale_grads_kernel(TensorSpan in, std::span<Tensor>, const UnscaleGradsAttrs&) {
  const float inv = *in[1].data<float>();
  bool found = false;
  for (const Tensor& grad : in.subspan(2)) {
    Tensor g = grad;
    if (g.is_contiguous()) {
      found |= unscale_any(g, inv);
    } else {
      Tensor c = g.contiguous();
      found |= unscale_any(c, inv);
      g.copy_(c);
    }
  }
  if (found) *in[0].data<float>() = 1.0f;
}

}  // namespace

static KernelRegistrar<UnscaleGradsAttrs> reg_unscale(op_unscale_grads(), DeviceType::CPU,
                                                      kFloatingTypes, unscale_grads_kernel);

}  // namespace ath::optim_kernels
