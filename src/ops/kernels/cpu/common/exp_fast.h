// exp for float, vectorizable (no libm call): Cephes' range reduction and degree-6 polynomial,
// within 2 ulp of expf. Inputs below -87 give 0 (so -inf gives 0, as masked softmax needs);
// above 88 saturate near FLT_MAX (softmax only feeds it values <= 0); NaN stays NaN.
//
// Always inlined, so the kernels compiled for AVX2/AVX-512 (the loss kernels' ISA copies, the
// RNN cells' AVX-512 row loop, ATH_ISA_DISPATCH copies) get it vectorized for their own ISA:
// a baseline function may be inlined into a wider-ISA one, never called as a vector.
// lanes.h's exp_fast_vec is the same arithmetic on vectors, bit for bit.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>

namespace ath::kernels {

[[gnu::always_inline]] inline float exp_fast(float x) {
  constexpr float kLog2e = 1.44269504088896341f, kMagic = 12582912.0f;  // 1.5 * 2^23
  float xc = std::min(std::max(x, -87.0f), 88.0f);
  float t = xc * kLog2e + kMagic;  // round(x * log2(e)) in the low mantissa bits
  float k = t - kMagic;
  float r = xc - k * 0.693359375f;
  r = r - k * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  float e = p * r * r + r + 1.0f;
  int32_t ki = std::bit_cast<int32_t>(t) - std::bit_cast<int32_t>(kMagic);
  float y = e * std::bit_cast<float>((ki + 127) << 23);
  y = x < -87.0f ? 0.0f : y;
  return x != x ? x : y;
}

}  // namespace ath::kernels
