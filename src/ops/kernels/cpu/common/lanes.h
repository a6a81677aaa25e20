// 16-lane vectors for the float32 row loops compiled per ISA (isa_dispatch.h), in registers of the
// copy's own width W: F16<W> holds 16 float lanes as 16 / W native vectors (one zmm for W = 16,
// AVX-512; two ymm for W = 8, AVX2; four xmm for W = 4, the baseline), D16<W> 16 double lanes.
// A body templated on W and dispatched with ATH_ISA_DISPATCH_W gets each copy its own width:
// GCC splits a vector wider than the target's registers through the stack (the AVX2 copy of the
// attention softmax, on 64-byte vectors, ran 3.4x slower than its AVX-512 copy).
//
//   template <int W>
//   ATH_ISA_BODY float sum_body(const float* x, int64_t n) {   // n a multiple of 16 here
//     F16<W> acc = vsplat<W>(0.0f);
//     for (int64_t j = 0; j < n; j += kLanes) acc = acc + vload<W>(x + j);
//     return hsum(acc);                    // == lane_sum<float>(n, x[j]), bit for bit
//   }
//
// Order: element j + l of a 16-element strip goes to lane l, a tail of r < 16 elements to lanes
// 0..r-1 (first_lanes), and the lanes meet in nn_common.h's lane_sum / lane_max tree (lane l +=
// lane l + w for w = 8, 4, 2, 1). Whatever W, every copy does the same IEEE operations on the
// same lanes, so results do not depend on the ISA. The helpers are always inlined and vectors
// never cross a real call, so GCC's note that passing them "changes the ABI" without AVX-512
// concerns no actual call: files that include this build with -Wno-psabi (src/CMakeLists.txt).
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <utility>

#include "exp_fast.h"
#include "isa_dispatch.h"

namespace ath::kernels {

inline constexpr int kLanes = 16;

// The native vectors of a copy whose float registers hold W lanes.
template <int W>
struct Native;
template <>
struct Native<4> {
  typedef float F __attribute__((vector_size(16)));
  typedef double D __attribute__((vector_size(16)));
  typedef int32_t I __attribute__((vector_size(16)));
};
template <>
struct Native<8> {
  typedef float F __attribute__((vector_size(32)));
  typedef double D __attribute__((vector_size(32)));
  typedef int32_t I __attribute__((vector_size(32)));
};
template <>
struct Native<16> {
  typedef float F __attribute__((vector_size(64)));
  typedef double D __attribute__((vector_size(64)));
  typedef int32_t I __attribute__((vector_size(64)));
};

typedef Native<8>::F Lanes8;
typedef Native<4>::F Lanes4;

// A vector read or written in place (unaligned; aliasing the element arrays).
template <class V>
struct __attribute__((packed, may_alias)) Unaligned {
  V v;
};

// 16 float lanes, 16 / W native vectors; lane l is part l / W, element l % W.
template <int W>
struct F16 {
  using V = typename Native<W>::F;
  static constexpr int kParts = kLanes / W;
  V p[kParts];
};

// A lane mask (all bits set where true), laid out as F16.
template <int W>
struct M16 {
  typename Native<W>::I p[kLanes / W];
};

// 16 double lanes, 32 / W vectors of W / 2.
template <int W>
struct D16 {
  using V = typename Native<W>::D;
  static constexpr int kWidth = W / 2, kParts = kLanes / kWidth;
  V p[kParts];
};

template <int W>
ATH_ISA_BODY F16<W> vload(const float* x) {
  F16<W> r;
  for (int k = 0; k < F16<W>::kParts; ++k)
    r.p[k] = reinterpret_cast<const Unaligned<typename F16<W>::V>*>(x + k * W)->v;
  return r;
}

template <int W>
ATH_ISA_BODY void vstore(float* x, const F16<W>& v) {
  for (int k = 0; k < F16<W>::kParts; ++k)
    reinterpret_cast<Unaligned<typename F16<W>::V>*>(x + k * W)->v = v.p[k];
}

template <int W>
ATH_ISA_BODY F16<W> vsplat(float s) {
  F16<W> r;
  for (int k = 0; k < F16<W>::kParts; ++k) r.p[k] = typename F16<W>::V{} + s;
  return r;
}

#define ATH_LANES_OPERATOR(Vec, Scalar, op)                             \
  template <int W>                                                      \
  ATH_ISA_BODY Vec<W> operator op(Vec<W> a, const Vec<W>& b) {          \
    for (int k = 0; k < Vec<W>::kParts; ++k) a.p[k] = a.p[k] op b.p[k]; \
    return a;                                                           \
  }                                                                     \
  template <int W>                                                      \
  ATH_ISA_BODY Vec<W> operator op(Vec<W> a, Scalar b) {                 \
    for (int k = 0; k < Vec<W>::kParts; ++k) a.p[k] = a.p[k] op b;      \
    return a;                                                           \
  }                                                                     \
  template <int W>                                                      \
  ATH_ISA_BODY Vec<W> operator op(Scalar a, Vec<W> b) {                 \
    for (int k = 0; k < Vec<W>::kParts; ++k) b.p[k] = a op b.p[k];      \
    return b;                                                           \
  }
ATH_LANES_OPERATOR(F16, float, +)
ATH_LANES_OPERATOR(F16, float, -)
ATH_LANES_OPERATOR(F16, float, *)
ATH_LANES_OPERATOR(D16, double, +)
ATH_LANES_OPERATOR(D16, double, -)
ATH_LANES_OPERATOR(D16, double, *)
#undef ATH_LANES_OPERATOR

// std::max(a, b) lane by lane: a < b ? b : a (so a NaN in a stays, as in lane_max).
template <int W>
ATH_ISA_BODY F16<W> vmax(F16<W> a, const F16<W>& b) {
  for (int k = 0; k < F16<W>::kParts; ++k) a.p[k] = a.p[k] < b.p[k] ? b.p[k] : a.p[k];
  return a;
}

// Lanes 0..r-1 set.
template <int W>
ATH_ISA_BODY M16<W> first_lanes(int64_t r) {
  using I = typename Native<W>::I;
  I lane;
  for (int l = 0; l < W; ++l) lane[l] = l;
  const auto rr = static_cast<int32_t>(std::min<int64_t>(r, kLanes));
  M16<W> m;
  for (int k = 0; k < F16<W>::kParts; ++k) m.p[k] = lane < rr - k * W;
  return m;
}

// m ? a : b, lane by lane.
template <int W>
ATH_ISA_BODY F16<W> vselect(const M16<W>& m, F16<W> a, const F16<W>& b) {
  for (int k = 0; k < F16<W>::kParts; ++k) a.p[k] = m.p[k] ? a.p[k] : b.p[k];
  return a;
}

// Lane l of a vector (tails; l is a run-time index).
template <int W>
ATH_ISA_BODY float get_lane(const F16<W>& v, int l) {
  return v.p[l / W][l % W];
}
template <int W>
ATH_ISA_BODY void set_lane(F16<W>& v, int l, float x) {
  v.p[l / W][l % W] = x;
}
template <int W>
ATH_ISA_BODY void add_lane(D16<W>& v, int l, double x) {
  v.p[l / D16<W>::kWidth][l % D16<W>::kWidth] += x;
}

// The last steps of lane_sum's / lane_max's tree, on the first 8 lanes (lanes 0-3 += 4-7, then
// 0, 1 += 2, 3, then 0 += 1), given as two 4-lane vectors.
template <class V4, class Op>
ATH_ISA_BODY auto tree4(V4 a, const V4& b, const Op& op) {
  a = op(a, b);
  return op(op(a[0], a[2]), op(a[1], a[3]));
}

// The 16 lanes reduced by the tree's first step (lane l += lane l + 8) to lanes 0-7, as two
// 4-lane vectors, then tree4.
template <int W, class Op, class Op4>
ATH_ISA_BODY float tree16(const F16<W>& v, const Op& op, const Op4& op4) {
  if constexpr (W == 16) {
    Lanes8 a, b;
    std::memcpy(&a, &v.p[0], sizeof a);
    std::memcpy(&b, reinterpret_cast<const char*>(&v.p[0]) + sizeof a, sizeof b);
    a = op(a, b);
    Lanes4 c, d;
    std::memcpy(&c, &a, sizeof c);
    std::memcpy(&d, reinterpret_cast<const char*>(&a) + sizeof c, sizeof d);
    return tree4(c, d, op4);
  } else if constexpr (W == 8) {
    const Lanes8 a = op(v.p[0], v.p[1]);
    Lanes4 c, d;
    std::memcpy(&c, &a, sizeof c);
    std::memcpy(&d, reinterpret_cast<const char*>(&a) + sizeof c, sizeof d);
    return tree4(c, d, op4);
  } else {
    return tree4(op(v.p[0], v.p[2]), op(v.p[1], v.p[3]), op4);
  }
}

// lane_sum's tree over the 16 lanes.
template <int W>
ATH_ISA_BODY float hsum(const F16<W>& v) {
  auto add = [](auto a, auto b) { return a + b; };
  return tree16<W>(v, add, add);
}

// lane_max's tree (std::max(a, b) = a < b ? b : a).
template <int W>
ATH_ISA_BODY float hmax(const F16<W>& v) {
  auto larger = [](auto a, auto b) { return a < b ? b : a; };
  return tree16<W>(v, larger, larger);
}

// exp_fast on every lane: its operations in its order (std::max(a, b) is a < b ? b : a), so the
// lanes get exp_fast's bits.
template <class V>
ATH_ISA_BODY V exp_fast_vec(V x) {
  using I = decltype(x < x);
  constexpr float kLog2e = 1.44269504088896341f, kMagic = 12582912.0f;
  const V lo = V{} - 87.0f, hi = V{} + 88.0f, magic = V{} + kMagic;
  V xc = x < lo ? lo : x;
  xc = hi < xc ? hi : xc;
  const V t = xc * kLog2e + magic;
  const V k = t - magic;
  V r = xc - k * 0.693359375f;
  r = r - k * -2.12194440e-4f;
  V p = V{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const V e = p * r * r + r + 1.0f;
  const I ki = std::bit_cast<I>(t) - std::bit_cast<int32_t>(kMagic);
  V y = e * std::bit_cast<V>((ki + 127) << 23);
  y = x < lo ? V{} : y;
  return x != x ? x : y;
}

template <int W>
ATH_ISA_BODY F16<W> exp_fast(F16<W> x) {
  for (int k = 0; k < F16<W>::kParts; ++k) x.p[k] = exp_fast_vec(x.p[k]);
  return x;
}

// ---- double lanes ----------------------------------------------------------------------------

template <int W>
ATH_ISA_BODY D16<W> zero_d16() {
  D16<W> r;
  for (int k = 0; k < D16<W>::kParts; ++k) r.p[k] = typename D16<W>::V{};
  return r;
}

template <int W>
ATH_ISA_BODY D16<W> vload(const double* x) {
  D16<W> r;
  for (int k = 0; k < D16<W>::kParts; ++k)
    r.p[k] = reinterpret_cast<const Unaligned<typename D16<W>::V>*>(x + k * (W / 2))->v;
  return r;
}

template <int W>
ATH_ISA_BODY void vstore(double* x, const D16<W>& v) {
  for (int k = 0; k < D16<W>::kParts; ++k)
    reinterpret_cast<Unaligned<typename D16<W>::V>*>(x + k * (W / 2))->v = v.p[k];
}

// v, pinned in registers: a loop accumulator passed through this before its horizontal sum is
// not kept split into the sum's halves through the stack (GCC did that to a row's running sum in
// self_attention_backward.cpp, storing and reloading it every iteration: 20% slower).
template <int W>
ATH_ISA_BODY F16<W> in_registers(F16<W> v) {
#if ATH_ISA_MULTI
  for (int k = 0; k < F16<W>::kParts; ++k) {
    if constexpr (W == 16) {
      asm("" : "+v"(v.p[k]));
    } else {
      asm("" : "+x"(v.p[k]));
    }
  }
#endif
  return v;
}

// Lanes [Off, Off + W / 2) of a float vector as doubles. Built element by element, which GCC
// compiles to one vcvtps2pd (its __builtin_convertvector of 8 lanes converted 4 at a time).
template <int W, int Off, std::size_t... I>
ATH_ISA_BODY typename Native<W>::D half_to_f64(const typename Native<W>::F& v,
                                               std::index_sequence<I...>) {
  return typename Native<W>::D{static_cast<double>(v[Off + static_cast<int>(I)])...};
}

// The 16 lanes, each converted exactly.
template <int W>
ATH_ISA_BODY D16<W> to_f64(const F16<W>& v) {
  D16<W> r;
  for (int k = 0; k < F16<W>::kParts; ++k) {
    typename F16<W>::V part = v.p[k];
#if ATH_ISA_MULTI
    // In a register: GCC otherwise may rebuild a part loaded from memory from scalar loads.
    if constexpr (W == 16) {
      asm("" : "+v"(part));
    } else {
      asm("" : "+x"(part));
    }
#endif
    r.p[2 * k] = half_to_f64<W, 0>(part, std::make_index_sequence<W / 2>());
    r.p[2 * k + 1] = half_to_f64<W, W / 2>(part, std::make_index_sequence<W / 2>());
  }
  return r;
}

// lane_sum<double>'s tree over the 16 lanes.
template <int W>
ATH_ISA_BODY double hsum(const D16<W>& v) {
  constexpr int kW = D16<W>::kWidth, kParts = D16<W>::kParts;
  // Whole-vector steps while a step's stride (8, 4, ...) spans whole vectors.
  typename D16<W>::V a[kParts];
  for (int k = 0; k < kParts; ++k) a[k] = v.p[k];
  int parts = kParts;
  for (; parts > 1; parts /= 2)
    for (int k = 0; k < parts / 2; ++k) a[k] += a[k + parts / 2];
  // Then within the one vector left (lanes 0..kW-1).
  if constexpr (kW == 8) {
    Native<8>::D c, d;
    std::memcpy(&c, &a[0], sizeof c);
    std::memcpy(&d, reinterpret_cast<const char*>(&a[0]) + sizeof c, sizeof d);
    c += d;
    return (c[0] + c[2]) + (c[1] + c[3]);
  } else if constexpr (kW == 4) {
    return (a[0][0] + a[0][2]) + (a[0][1] + a[0][3]);
  } else {
    return a[0][0] + a[0][1];
  }
}

}  // namespace ath::kernels
