// The standard normal CDF Phi(x) and density phi(x) for the exact GELU (x * Phi(x)) and its
// gradient (Phi(x) + x * phi(x)). For float they are branch-free polynomials plus exp_fast, so
// the contiguous loops vectorize (std::erf is a scalar libm call, the bulk of a transformer's
// GELU time); double keeps std::erf / std::exp.
//
// erf(a) = a + a * P(a^2) for |a| < 0.921875, and erfc(|a|) = exp(-R(|a|)) above, with the
// minimax coefficients of N. Juffa's erff (within 1 ulp with FMA; measured within 2 ulp here,
// without FMA, against double erf). Phi is formed from erfc in the tails, so 1 + erf(x / sqrt 2)
// does not cancel for negative x and GELU keeps its relative accuracy there.
#pragma once

#include <cmath>

#include "common/nn_common.h"

namespace ath::kernels {

inline constexpr double kInvSqrt2 = 0.70710678118654752440;
inline constexpr double kInvSqrt2Pi = 0.39894228040143267794;

// Phi(x) = 0.5 * (1 + erf(x / sqrt(2))). Forced inline: as an out-of-line call (the compiler's
// choice for a function this size in a -fPIC library) the loops around it cannot vectorize.
[[gnu::always_inline]] inline float normal_cdf_fast(float x) {
  const float a = x * float(kInvSqrt2), t = std::fabs(a), s = a * a;
  float p = -0x1.3a1a82p-11f;
  p = p * s + 0x1.473f48p-8f;
  p = p * s - 0x1.b68bd2p-6f;
  p = p * s + 0x1.ce1a46p-4f;
  p = p * s - 0x1.8126e0p-2f;
  p = p * s + 0x1.06eba6p-3f;
  const float small = 0.5f + 0.5f * (p * a + a);
  float r = 0x1.222900p-16f * t - 0x1.91d2ccp-12f;
  const float u = 0x1.fd1336p-09f * t - 0x1.8d6300p-06f;
  r = r * s + u;
  r = r * t + 0x1.b55cb0p-4f;
  r = r * t + 0x1.450aa0p-1f;
  r = r * t + 0x1.079d0cp-3f;
  r = r * t + t;
  const float half_erfc = 0.5f * exp_fast(-r);  // 0.5 * erfc(|a|)
  const float large = a < 0.0f ? half_erfc : 1.0f - half_erfc;
  return t >= 0.921875f ? large : small;
}

template <class C>
[[gnu::always_inline]] inline C normal_cdf(C x) {
  if constexpr (std::is_same_v<C, float>) {
    return normal_cdf_fast(x);
  } else {
    return C(0.5) * (C(1) + std::erf(x * C(kInvSqrt2)));
  }
}

// phi(x) = exp(-x^2 / 2) / sqrt(2 pi).
template <class C>
[[gnu::always_inline]] inline C normal_pdf(C x) {
  return exp_c<C>(C(-0.5) * x * x) * C(kInvSqrt2Pi);
}

}  // namespace ath::kernels
