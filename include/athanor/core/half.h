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

  static uint16_t from_float(float f) {
    uint32_t x = detail::float_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t abs = x & 0x7fffffffu;
    if (abs >= 0x7f800000u) {  // Inf or NaN
      return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
    }
    if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> Inf
    if (abs < 0x38800000u) {  // subnormal or zero in half: add magic to round via float unit
      float magic = detail::bits_float(0x3f000000u);  // 0.5: shifts mantissa into place
      float v = detail::bits_float(abs) + magic;
      return static_cast<uint16_t>(sign | (detail::float_bits(v) - detail::float_bits(magic)));
    }
    uint32_t mant_odd = (abs >> 13) & 1u;
    abs += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round to nearest even
    return static_cast<uint16_t>(sign | (abs >> 13));
  }

  static float to_float(uint16_t h) {
    uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t out;
    if (exp == 0) {
      if (mant == 0) {
        out = sign;
      } else {  // subnormal: normalize
        int e = -1;
        do {
          ++e;
          mant <<= 1;
        } while ((mant & 0x400u) == 0);
        out = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (mant & 0x3ffu) << 13;
      }
    } else if (exp == 0x1f) {
      out = sign | 0x7f800000u | (mant << 13);
    } else {
      out = sign | ((exp + 112u) << 23) | (mant << 13);
    }
    return detail::bits_float(out);
  }
};

}  // namespace ath
