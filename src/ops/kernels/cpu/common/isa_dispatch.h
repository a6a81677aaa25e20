// Hot loops compiled for AVX-512 and AVX2 as well as the baseline x86-64 the library is built
// for, chosen per call by ath::cpu_isa() (so ATH_MAX_CPU_ISA and set_max_cpu_isa reach them;
// GCC's target_clones picked once, at load time, and could not be capped). Loops of polynomial
// math with exp_fast (GELU, the attention softmax) run 5-10x faster with AVX-512 than as
// baseline SSE2.
//
//   ATH_ISA_BODY void gelu_f32_body(const float* x, float* y, int64_t n) { ...the loop... }
//   ATH_ISA_DISPATCH(gelu_f32, (const float* x, float* y, int64_t n), (x, y, n))
//   ...
//   gelu_f32(x, y, n);   // the AVX-512, AVX2 or baseline copy of the body
//
// The body is always inlined into one function per ISA, so it is compiled (and vectorized) for
// each; helpers it calls must be inline too (always_inline where GCC would not inline them).
// Files that use this build with -ffp-contract=off (src/CMakeLists.txt), so no copy contracts
// a*b+c into an FMA: every copy does the same IEEE operations and the results do not depend on
// the ISA. (GELU opts out for speed: its wide copies fuse, and may differ from the baseline
// copy in the last bit.)
// Elsewhere (other compilers or CPUs) only the baseline copy exists.
#pragma once

#include "athanor/core/cpu_isa.h"

#define ATH_ISA_BODY [[gnu::always_inline]] inline

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define ATH_ISA_MULTI 1
#define ATH_ISA_TARGET_AVX2 __attribute__((target("avx2,fma,f16c,bmi,bmi2,lzcnt,movbe")))
#define ATH_ISA_TARGET_AVX512 \
  __attribute__((             \
      target("avx2,fma,f16c,bmi,bmi2,lzcnt,movbe,avx512f,avx512bw,avx512dq,avx512vl,avx512cd")))
#define ATH_ISA_DISPATCH(name, params, args)                            \
  ATH_ISA_TARGET_AVX512 void name##_avx512 params { name##_body args; } \
  ATH_ISA_TARGET_AVX2 void name##_avx2 params { name##_body args; }     \
  void name params {                                                    \
    const ::ath::CpuIsa isa_ = ::ath::cpu_isa();                        \
    if (isa_ >= ::ath::CpuIsa::Avx512) return name##_avx512 args;       \
    if (isa_ >= ::ath::CpuIsa::Avx2) return name##_avx2 args;           \
    name##_body args;                                                   \
  }
#else
#define ATH_ISA_MULTI 0
#define ATH_ISA_DISPATCH(name, params, args) \
  void name params { name##_body args; }
#endif
