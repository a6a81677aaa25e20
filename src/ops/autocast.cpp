// Autocast (athanor/ops/autocast.h): the thread's state, its guard, and the casts the dispatcher
// applies to the inputs of ops with an AutocastPolicy.
#include "athanor/ops/autocast.h"

#include <unordered_map>

#include "athanor/ops/copy.h"
#include "athanor/ops/dispatch.h"
#include "kernels/cpu/common/dnnl_utils.h"

namespace ath {

namespace detail {

thread_local std::optional<DType> t_autocast;

namespace {

// Casts of parameters (leaves that require grad), reused for the rest of the outermost autocast
// scope: a weight used by several ops, or several micro-steps, is cast once. Keyed by the
// source's TensorImpl, which the entry keeps alive (so the key cannot be reused); an entry is
// stale once the source's version moves (an in-place update).
struct CachedCast {
  Tensor source;
  uint32_t version = 0;
  Tensor cast;
};
thread_local std::unordered_map<const TensorImpl*, CachedCast> t_cast_cache;

Tensor cached_cast(const Tensor& t, DType dtype) {
  const AutogradMeta* meta = autograd_meta_if(t);
  const bool parameter = meta != nullptr && meta->requires_grad && meta->grad_fn == nullptr;
  if (!parameter) return to_dtype(t, dtype);
  auto it = t_cast_cache.find(t.impl());
  if (it != t_cast_cache.end() && it->second.version == t.version() &&
      it->second.cast.dtype() == dtype && GradMode::is_enabled() == it->second.cast.requires_grad())
    return it->second.cast;
  Tensor cast = to_dtype(t, dtype);
  t_cast_cache[t.impl()] = CachedCast{t, t.version(), cast};
  return cast;
}

bool is_low_precision(DType d) { return d == kBFloat16 || d == kFloat16; }

}  // namespace

TensorSpan autocast_inputs(const OpDef& op, TensorSpan inputs, std::vector<Tensor>& storage) {
  const DType low = *t_autocast;
  auto target = [&](const Tensor& t) -> std::optional<DType> {
    const DType d = t.dtype();
    if (!t.defined() || !is_floating(d) || d == kFloat64) return std::nullopt;
    if (op.autocast == AutocastPolicy::LowPrecision) {
      if (d != low) return low;
    } else if (is_low_precision(d)) {
      return kFloat32;
    }
    return std::nullopt;
  };
  bool any = false;
  for (const Tensor& t : inputs) any = any || target(t).has_value();
  if (!any) return inputs;
  storage.assign(inputs.begin(), inputs.end());
  AutocastPause pause;  // the casts themselves are plain conversions
  for (Tensor& t : storage) {
    if (std::optional<DType> d = target(t)) t = cached_cast(t, *d);
  }
  return storage;
}

}  // namespace detail

AutocastGuard::AutocastGuard(std::optional<DType> dtype) : previous_(detail::t_autocast) {
  ATH_CHECK(!dtype || *dtype == kBFloat16 || *dtype == kFloat16, ValueError,
            "autocast: the dtype must be bfloat16 or float16, got {}", dtype_name(*dtype));
  detail::t_autocast = dtype;
}

AutocastGuard::~AutocastGuard() {
  // Leaving the outermost autocast scope ends its casts' lifetime.
  if (!previous_ && detail::t_autocast) detail::t_cast_cache.clear();
  detail::t_autocast = previous_;
}

std::optional<DType> autocast_dtype() { return detail::t_autocast; }

bool bf16_products_native() { return kernels::bf16_products_native(); }

}  // namespace ath
