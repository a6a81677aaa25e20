// The fused update machinery every optimizer update op's kernel shares (the kernels beside this
// file; the ops are declared in athanor/ops/optimizer_updates.h). A kernel is a struct with an
// `Args<T>` (pointers + scalars already cast to T, as PyTorch casts a Python float to the tensor's
// dtype) and an always-inline `run<T, flags...>(args, begin, end)` loop. `launch` runs it over
// [0, n) with parallel_for (tensors under kUpdateGrain elements stay on the calling thread),
// each element independent, so results never depend on the thread count.
//
// PyTorch's CPU kernels (AVX2 here) compute `add(x, alpha)` and `addcmul` with fused
// multiply-adds; kernels call std::fma at the same places so float32 trajectories match
// bit for bit. Every loop is compiled for AVX-512, AVX2 and the baseline ISA (isa_dispatch.h's
// targets, chosen per call by ath::cpu_isa()); in the baseline copy std::fma is libm's exact
// fma (slower, same results), and the files build with -ffp-contract=off, so no copy fuses
// anything else: every ISA gives the same bits.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "../common/isa_dispatch.h"
#include "athanor/core/parallel.h"
#include "athanor/ops/op.h"
#include "athanor/tensor/tensor.h"

namespace ath::optim_kernels {

inline constexpr int64_t kUpdateGrain = 16384;

template <class K, class T, bool... F>
void run_baseline(const typename K::template Args<T>& a, int64_t begin, int64_t end) {
  K::template run<T, F...>(a, begin, end);
}
#if ATH_ISA_MULTI
template <class K, class T, bool... F>
ATH_ISA_TARGET_AVX2 void run_avx2(const typename K::template Args<T>& a, int64_t begin,
                                  int64_t end) {
  K::template run<T, F...>(a, begin, end);
}
template <class K, class T, bool... F>
ATH_ISA_TARGET_AVX512 void run_avx512(const typename K::template Args<T>& a, int64_t begin,
                                      int64_t end) {
  K::template run<T, F...>(a, begin, end);
}
#endif

template <class K, class T, bool... F>
void launch(const typename K::template Args<T>& a, int64_t n) {
  using Copy = void (*)(const typename K::template Args<T>&, int64_t, int64_t);
  Copy copy = &run_baseline<K, T, F...>;
#if ATH_ISA_MULTI
  copy = kernels::pick_isa_copy<Copy>(&run_baseline<K, T, F...>, &run_avx2<K, T, F...>,
                                      &run_avx512<K, T, F...>);
#endif
  parallel_for(0, n, kUpdateGrain, [&](int64_t begin, int64_t end) { copy(a, begin, end); });
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

// The multi-tensor layout of the update ops (athanor/ops/optimizer_updates.h): `lists`
// equal-length lists concatenated. list(j)[i] is list j's tensor for parameter i.
struct UpdateLists {
  TensorSpan inputs;
  int64_t n;
  UpdateLists(TensorSpan in, int lists) : inputs(in), n(static_cast<int64_t>(in.size()) / lists) {}
  const Tensor& at(int list, int64_t i) const {
    return inputs[static_cast<std::size_t>(list * n + i)];
  }
  template <class T>
  T* data(int list, int64_t i) const {
    return at(list, i).data<T>();
  }
};

// A 0-d float64 counter of the update (step, NAdam's mu_product), read and written in place.
inline double& counter(const UpdateLists& l, int list, int64_t i) {
  return *l.data<double>(list, i);
}

// Calls fn.template operator()<T>() with T = float or double (the kernel dtype; low-precision
// parameters reach the kernels widened to float32 by low_precision_update below).
template <class Fn>
void dispatch_update(DType dtype, Fn&& fn) {
  if (dtype == kFloat64)
    fn.template operator()<double>();
  else
    fn.template operator()<float>();
}

// Low-precision parameters (bf16-true / 16-true training): every list past the counters is
// widened to a float32 copy, the float32 kernel runs on the copies, and each list the op writes
// is rounded back — float32 arithmetic on low-precision storage, as PyTorch's fused optimizers
// compute. The counters (the first kCounters lists, 0-d float64) are passed through as they are.
template <class A, void (*Kernel)(TensorSpan, std::span<Tensor>, const A&), int kCounters>
void low_precision_update(TensorSpan in, std::span<Tensor> out, const A& attrs) {
  const UpdateLists l(in, attrs.lists());
  const auto n = static_cast<std::size_t>(l.n);
  const std::size_t first = kCounters * n, grads = (kCounters + 1) * n;
  std::vector<Tensor> wide(in.begin(), in.end());
  for (std::size_t k = first; k < wide.size(); ++k) wide[k] = in[k].to(kFloat32);
  Kernel(TensorSpan(wide), out, attrs);
  for (std::size_t k = first; k < wide.size(); ++k) {
    if (k >= grads && k < grads + n) continue;  // the gradients are only read
    Tensor target = in[k];
    target.copy_(wide[k]);
  }
}
inline constexpr std::array kLowPrecisionTypes{kBFloat16, kFloat16};

}  // namespace ath::optim_kernels
