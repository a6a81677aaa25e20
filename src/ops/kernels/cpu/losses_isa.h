// Runtime ISA selection for the loss kernels. The library is built for plain x86-64; the loss
// kernel files compile their bodies once more for AVX2+FMA and for AVX-512 (GCC target pragmas
// around a second and third inclusion of the body), and their float32 registration is a kernel
// that picks a copy on every call by ath::cpu_isa() (so ATH_MAX_CPU_ISA and set_max_cpu_isa
// reach it). Every copy does the same IEEE operations in the same order (no FMA contraction,
// fixed lane reductions), so results do not depend on which one runs.
// Only float32 gets the wider copies: it is the dtype models train in (bfloat16/float16 losses
// run in float32 under autocast, float64 is for gradcheck), and each extra dtype costs a minute
// of compile time per ISA. The sanitizer build (ATH_SANITIZE_BUILD) compiles the baseline copy
// only: the wider ones are the same source, tested in the release build.
#pragma once

#include <span>

#include "athanor/core/cpu_isa.h"
#include "athanor/ops/op.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(ATH_SANITIZE_BUILD)
#define ATH_LOSSES_MULTI_ISA 1
#else
#define ATH_LOSSES_MULTI_ISA 0
#endif

namespace ath::kernels {

// A kernel that forwards each call to the copy for the current ISA: registered as the float32
// kernel, e.g. &pick_isa<&base::k<float>, &avx2::k<float>, &avx512::k<float>, Attrs>.
template <auto Base, auto Avx2, auto Avx512, class A>
void pick_isa(TensorSpan in, std::span<Tensor> out, const A& a) {
  const CpuIsa isa = cpu_isa();
  if (isa >= CpuIsa::Avx512) return Avx512(in, out, a);
  if (isa >= CpuIsa::Avx2) return Avx2(in, out, a);
  Base(in, out, a);
}

}  // namespace ath::kernels
