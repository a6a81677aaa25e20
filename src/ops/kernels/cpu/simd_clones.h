// ATH_SIMD_CLONES: compile a hot loop for AVX-512 and AVX2 as well as the baseline x86-64 the
// library is built for, and pick the best at load time (GCC's target_clones, an ifunc). Loops of
// polynomial math with exp_fast (GELU, the attention softmax) run 5-10x faster with AVX-512 than
// as baseline SSE2. Put it on a plain (non-template) function holding the whole loop; helpers it
// calls must be inline (always_inline where GCC would not inline them) so they are compiled
// for each target too. Elsewhere (other compilers or CPUs) it is empty: the baseline build.
#pragma once

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define ATH_SIMD_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define ATH_SIMD_CLONES
#endif
