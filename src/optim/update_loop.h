// The fused update machinery every optimizer shares. A kernel is a struct with an `Args<T>`
// (pointers + scalars already cast to T, as PyTorch casts a Python float to the tensor's
// dtype) and an always-inline `run<T, flags...>(args, begin, end)` loop. `launch` runs it over
// [0, n) with parallel_for (tensors under kUpdateGrain elements stay on the calling thread),
// each element independent, so results never depend on the thread count.
//
// PyTorch's CPU kernels (AVX2 here) compute `add(x, alpha)` and `addcmul` with fused
// multiply-adds; kernels call std::fma at the same places so float32 trajectories match
// bit for bit. Every loop is compiled twice: with AVX2+FMA instructions (vectorized, chosen
// when ath::cpu_isa() allows) and for the baseline ISA, where std::fma is libm's exact fma (slower,
// same results).
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>

#include "athanor/core/cpu_isa.h"
#include "athanor/core/parallel.h"
#include "athanor/optim/optimizer.h"
#include "athanor/tensor/tensor.h"

namespace ath::optim::detail {

inline constexpr int64_t kUpdateGrain = 16384;

template <class K, class T, bool... F>
__attribute__((target("avx2,fma"))) void run_fma(const typename K::template Args<T>& a,
                                                 int64_t begin, int64_t end) {
  K::template run<T, F...>(a, begin, end);
}

template <class K, class T, bool... F>
void run_plain(const typename K::template Args<T>& a, int64_t begin, int64_t end) {
  K::template run<T, F...>(a, begin, end);
}

template <class K, class T, bool... F>
void launch(const typename K::template Args<T>& a, int64_t n) {
  const bool fma = cpu_isa() >= CpuIsa::Avx2;  // AVX2 and AVX-512 hosts, unless capped
  parallel_for(0, n, kUpdateGrain, [&](int64_t begin, int64_t end) {
    if (fma)
      run_fma<K, T, F...>(a, begin, end);
    else
      run_plain<K, T, F...>(a, begin, end);
  });
}

// Calls fn.template operator()<b0, b1, ...>() with the runtime flags as template arguments, so
// that every option mix gets a branch-free (vectorizable) loop.
template <bool... Bound, class Fn>
void with_flags_impl(Fn& fn) {
  fn.template operator()<Bound...>();
}
template <bool... Bound, class Fn, class... Rest>
void with_flags_impl(Fn& fn, bool b, Rest... rest) {
  if (b)
    with_flags_impl<Bound..., true>(fn, rest...);
  else
    with_flags_impl<Bound..., false>(fn, rest...);
}
template <class Fn, class... Flags>
void with_flags(Fn&& fn, Flags... flags) {
  with_flags_impl<>(fn, static_cast<bool>(flags)...);
}

// torch.maximum / amax: NaN wins.
template <class T>
[[gnu::always_inline]] inline T nan_max(T a, T b) {
  return ((a > b) | (a != a)) ? a : b;
}

// A parameter with a gradient, ready for a fused update: `param` and `grad` are contiguous with
// the parameter's dtype and shape. A non-contiguous parameter is updated in a contiguous copy
// that finish() writes back; otherwise finish() bumps the version counter, so autograd notices
// the in-place write.
struct UpdateTarget {
  Tensor param;
  Tensor grad;
  Tensor original;
  bool copy_back = false;
  int64_t numel() const { return param.numel(); }
  void finish();
};

// Nothing when the parameter has no gradient (it is skipped). Float16/bfloat16 parameters are
// a NotImplementedError, other dtypes a DTypeError; a gradient whose shape or dtype differs from
// the parameter's is a ShapeError / DTypeError.
std::optional<UpdateTarget> prepare(std::string_view optimizer, const Tensor& param);

// A contiguous state tensor shaped like the parameter, filled with `value`.
Tensor new_state(const Tensor& param, double value = 0.0);

// ValueError unless every state tensor still has the parameter's shape and dtype (a parameter
// replaced through set_data would otherwise be updated from out-of-bounds state). Called before
// a parameter's update changes anything.
void check_state(const ParamState& st, const Tensor& param);

// The state tensor `name`, created (filled with `value`) when absent.
Tensor state_tensor(ParamState& st, const Tensor& param, const char* name, double value = 0.0);

// Calls fn.template operator()<T>() with T = float or double for the parameter's dtype.
template <class Fn>
void dispatch_update(const Tensor& param, Fn&& fn) {
  if (param.dtype() == kFloat64)
    fn.template operator()<double>();
  else
    fn.template operator()<float>();
}

}  // namespace ath::optim::detail
