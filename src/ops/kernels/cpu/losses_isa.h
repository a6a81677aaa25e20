// Runtime ISA selection for the loss kernels. The library is built for plain x86-64; the loss
// kernel files compile their bodies once more for AVX2+FMA and for AVX-512 (GCC target pragmas
// around a second and third inclusion of the body) and register those copies, for float32, at a
// higher priority when the CPU and OS support them. Every copy does the same IEEE operations in
// the same order (no FMA contraction in ISO C++ mode, fixed lane reductions), so results do not
// depend on which one runs.
// Only float32 gets the wider copies: it is the dtype models train in (bfloat16/float16 losses
// run in float32 under autocast, float64 is for gradcheck), and each extra dtype costs a minute
// of compile time per ISA. The sanitizer build (ATH_SANITIZE_BUILD) compiles the baseline copy
// only: the wider ones are the same source, tested in the release build.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(ATH_SANITIZE_BUILD)
#define ATH_LOSSES_MULTI_ISA 1
#else
#define ATH_LOSSES_MULTI_ISA 0
#endif

namespace ath::kernels {

inline bool cpu_has_avx2() {
#if ATH_LOSSES_MULTI_ISA
  __builtin_cpu_init();  // registrars run during static initialization
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

inline bool cpu_has_avx512() {
#if ATH_LOSSES_MULTI_ISA
  __builtin_cpu_init();
  return cpu_has_avx2() && __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512vl");
#else
  return false;
#endif
}

}  // namespace ath::kernels
