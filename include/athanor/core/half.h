// 16-bit floating types stored as raw bits: BFloat16 (8-bit exponent, like float32 truncated)
// and Half (IEEE binary16). Arithmetic goes through float; conversions round to nearest even,
// as PyTorch's do, so values match bit for bit.
#pragma once

#include <cstdint>
#include <cstring>

namespace ath {

namespace detail {
inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
}  // namespace detail

struct BFloat16 {
  uint16_t bits = 0;

  BFloat16() = default;
  BFloat16(float f) : bits(round(f)) {}  // NOLINT: implicit like a builtin float type
  operator float() const {
    return detail::bits_float(static_cast<uint32_t>(bits) << 16);
  }  // NOLINT

  static uint16_t round(float f) {
    uint32_t u = detail::float_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // NaN
    u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even
    return static_cast<uint16_t>(u >> 16);
  }
  static BFloat16 from_bits(uint16_t b) {
    BFloat16 r;
    r.bits = b;
    return r;
  }
};

struct Half {
  uint16_t bits = 0;

  Half() = default;
  Half(float f) : bits(from_float(f)) {}             // NOLINT
  operator float() const { return to_float(bits); }  // NOLINT

  static Half from_bits(uint16_t b) {
    Half r;
    r.bits = b;
    return r;
  }

  // Both conversions are branch-free (every case computed, one selected), so the loops that
  // convert arrays vectorize; as branches, float16 casts, ReLU and max-pool ran scalar and took
  // most of a 16-mixed step. Bit-identical to the branching versions over every input.
  static uint16_t from_float(float f) {
    const uint32_t x = detail::float_bits(f);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t abs = x & 0x7fffffffu;
    const int32_t a = static_cast<int32_t>(abs);  // signed compares vectorize on SSE2/AVX2
    // Inf/NaN (a NaN becomes the quiet NaN), and every value that rounds past 65504: Inf.
    const uint32_t special = a > 0x7f800000 ? 0x7e00u : 0x7c00u;
    // Below 2^-14 (half's subnormals and zero): adding 0.5 shifts the mantissa into place and
    // the float unit rounds it to nearest even.
    const uint32_t subnormal =
        detail::float_bits(detail::bits_float(abs) + 0.5f) - detail::float_bits(0.5f);
    // Normal: rebias the exponent (-112 << 23) and round to nearest even on bit 13.
    const uint32_t normal = (abs + 0xc8000fffu + ((abs >> 13) & 1u)) >> 13;
    const uint32_t h = a >= 0x477ff000 ? special : a < 0x38800000 ? subnormal : normal;
    return static_cast<uint16_t>(sign | h);
  }

  static float to_float(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t shifted = static_cast<uint32_t>(h & 0x7fffu) << 13;  // exponent and mantissa
    const uint32_t exp = shifted & 0x0f800000u;
    const uint32_t normal = shifted + 0x38000000u;  // rebias the exponent (+112 << 23)
    // Subnormal and zero: as 2^-14 * (1 + m) in float, minus 2^-14 (exact).
    const uint32_t subnormal = detail::float_bits(detail::bits_float(normal + 0x00800000u) -
                                                  detail::bits_float(0x38800000u));
    const uint32_t special = normal + 0x38000000u;  // Inf/NaN: exponent 255, mantissa kept
    const uint32_t out = exp == 0x0f800000u ? special : exp == 0 ? subnormal : normal;
    return detail::bits_float(sign | out);
  }
};

}  // namespace ath
