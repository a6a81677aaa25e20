// The one CPU-feature dispatch mechanism of the kernels. The library is built for baseline
// x86-64; hot loops are compiled again for AVX2 and AVX-512 and a copy is chosen per call by
// ath::cpu_isa() (so ATH_MAX_CPU_ISA and set_max_cpu_isa reach every one of them; GCC's
// target_clones picked once, at load time, and could not be capped). Loops of polynomial math
// with exp_fast (GELU, the attention softmax) run 5-10x faster with AVX-512 than as baseline SSE2.
//
// This header defines the ISA targets, the condition under which wider copies exist
// (ATH_ISA_MULTI) and the selector (pick_isa_copy); kernels make their copies in one of two
// ways, both compiled for exactly these targets:
// - a function body, always inlined into one function per ISA (most kernels):
//
//     ATH_ISA_BODY void gelu_f32_body(const float* x, float* y, int64_t n) { ...the loop... }
//     ATH_ISA_DISPATCH(gelu_f32, (const float* x, float* y, int64_t n), (x, y, n))
//     ...
//     gelu_f32(x, y, n);   // the AVX-512, AVX2 or baseline copy of the body
//
//   or, for a body templated on the vector width W of lanes.h (one register per copy's ISA),
//   ATH_ISA_DISPATCH_W, which compiles name_body<16> for AVX-512, <8> for AVX2, <4> for baseline;
//   or the same for a template body (the optimizer updates, the RNN cells), with the
//   ATH_ISA_TARGET_* attributes on per-ISA function templates picked by pick_isa_copy. The body
//   and the helpers it calls must be inline (always_inline where GCC would not inline them), so
//   they are compiled (and vectorized) for each ISA.
// - a whole family of template kernels, included three times in per-ISA namespaces between
//   ATH_ISA_BEGIN_AVX2 / ATH_ISA_BEGIN_AVX512 and ATH_ISA_END (the losses, whose kernels call
//   many helpers), registered through pick_isa (a kernel that forwards to the current copy).
//   Explicit vector code (vector_size types) is best written this way: in an always-inline body
//   outside a region, GCC lowered the 2x2 max-pool's vector compares and int64 lanes to SSE2-sized
//   or scalar code even in the AVX-512 copy (pool_max_f32_impl.h is included per region).
//
// Files that use this build with -ffp-contract=off (src/CMakeLists.txt; the region macros set it
// too), so no copy contracts a*b+c into an FMA: every copy does the same IEEE operations and
// the results do not depend on the ISA. (GELU opts out for speed: its wide copies fuse, and may
// differ from the baseline copy in the last bit.)
// Only GCC on x86-64 makes the wider copies, and not in the sanitizer build (ATH_SANITIZE_BUILD:
// the same source, tested in the release build); elsewhere only the baseline copy exists.
#pragma once

#include <span>

#include "athanor/core/cpu_isa.h"
#include "athanor/ops/op.h"

#define ATH_ISA_BODY [[gnu::always_inline]] inline

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(ATH_SANITIZE_BUILD)
#define ATH_ISA_MULTI 1
#else
#define ATH_ISA_MULTI 0
#endif

// The targets, once: the AVX2 hosts' features (Haswell on), and AVX-512's (Skylake-SP on).
#define ATH_ISA_FEATURES_AVX2 "avx2,fma,f16c,bmi,bmi2,lzcnt,movbe"
#define ATH_ISA_FEATURES_AVX512 ATH_ISA_FEATURES_AVX2 ",avx512f,avx512bw,avx512dq,avx512vl,avx512cd"

#if ATH_ISA_MULTI
#define ATH_ISA_TARGET_AVX2 __attribute__((target(ATH_ISA_FEATURES_AVX2)))
#define ATH_ISA_TARGET_AVX512 __attribute__((target(ATH_ISA_FEATURES_AVX512)))

#define ATH_ISA_PRAGMA(x) _Pragma(#x)
#define ATH_ISA_PRAGMA_TARGET(features) ATH_ISA_PRAGMA(GCC target(features))
// A region compiled for an ISA, with the same roundings as the baseline copy.
#define ATH_ISA_BEGIN(features)                               \
  _Pragma("GCC push_options") ATH_ISA_PRAGMA_TARGET(features) \
      _Pragma("GCC optimize(\"fp-contract=off\")")
#define ATH_ISA_BEGIN_AVX2 ATH_ISA_BEGIN(ATH_ISA_FEATURES_AVX2)
#define ATH_ISA_BEGIN_AVX512 ATH_ISA_BEGIN(ATH_ISA_FEATURES_AVX512)
#define ATH_ISA_END _Pragma("GCC pop_options")

#define ATH_ISA_DISPATCH(name, params, args)                                                   \
  ATH_ISA_TARGET_AVX512 void name##_avx512 params { name##_body args; }                        \
  ATH_ISA_TARGET_AVX2 void name##_avx2 params { name##_body args; }                            \
  void name##_baseline params { name##_body args; }                                            \
  void name params {                                                                           \
    return ::ath::kernels::pick_isa_copy(&name##_baseline, &name##_avx2, &name##_avx512) args; \
  }
// The same for a body templated on the copy's float vector width (lanes.h): name##_body<16> with
// AVX-512, <8> with AVX2, <4> in the baseline copy.
#define ATH_ISA_DISPATCH_W(name, params, args)                                                 \
  ATH_ISA_TARGET_AVX512 void name##_avx512 params { name##_body<16> args; }                    \
  ATH_ISA_TARGET_AVX2 void name##_avx2 params { name##_body<8> args; }                         \
  void name##_baseline params { name##_body<4> args; }                                         \
  void name params {                                                                           \
    return ::ath::kernels::pick_isa_copy(&name##_baseline, &name##_avx2, &name##_avx512) args; \
  }
#else
#define ATH_ISA_DISPATCH(name, params, args) \
  void name params { name##_body args; }
#define ATH_ISA_DISPATCH_W(name, params, args) \
  void name params { name##_body<4> args; }
#endif

namespace ath::kernels {

// The copy for the current ISA (cpu_isa(), capped by ATH_MAX_CPU_ISA).
template <class F>
F pick_isa_copy(F baseline, F avx2, F avx512) {
  const CpuIsa isa = cpu_isa();
  if (isa >= CpuIsa::Avx512) return avx512;
  if (isa >= CpuIsa::Avx2) return avx2;
  return baseline;
}

// A kernel that forwards each call to the copy for the current ISA: registered as the kernel,
// e.g. &pick_isa<&base::k<float>, &avx2::k<float>, &avx512::k<float>, Attrs>.
template <auto Base, auto Avx2, auto Avx512, class A>
void pick_isa(TensorSpan in, std::span<Tensor> out, const A& a) {
  pick_isa_copy(Base, Avx2, Avx512)(in, out, a);
}

}  // namespace ath::kernels
