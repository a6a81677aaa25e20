// The float32 2x2 / stride-2 max-pool chunks of pool_max.cpp as explicit vectors (GCC vector
// extensions), inlined there into one copy per ISA (common/isa_dispatch.h). Left to the
// auto-vectorizer these loops ran scalar at CNN sizes: a 14-wide output row is shorter than one
// 16-lane vector.
//
// A chunk is W outputs of one output row and the 2W columns of the two input rows they cover.
// Its lanes [0, W/2) are the outputs from column `lo` of the row, lanes [W/2, W) those from
// column `hi`: hi = lo + W/2 for W consecutive outputs; a row narrower than W (W2's 7-wide rows)
// is one "split" chunk with lo = 0 and hi = out_w - W/2, its halves overlapping. A row wider
// than W ends in a chunk at out_w - W that overlaps the one before it. Overlapping lanes compute
// and store the same values twice, so no scalar tail is needed.
//
// Lanes compare exactly as the scalar loops (a later candidate wins when greater or NaN) and
// move values as bits, so every ISA's copy gives the scalar loop's bits. Compares and selects
// run in 32-bit lanes: GCC lowers compares of eight 64-bit lanes to scalar code.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace ath::kernels::pool_f32 {

typedef float F32x16 __attribute__((vector_size(64)));
typedef float F32x8 __attribute__((vector_size(32)));
typedef float F32x4 __attribute__((vector_size(16)));
typedef float F32x2 __attribute__((vector_size(8)));
typedef int32_t I32x8 __attribute__((vector_size(32)));
typedef int32_t I32x4 __attribute__((vector_size(16)));
typedef int64_t I64x8 __attribute__((vector_size(64)));
typedef int64_t I64x4 __attribute__((vector_size(32)));
typedef int64_t I64x2 __attribute__((vector_size(16)));

// The widest input row the chunks take: in-window offsets (up to in_w + 1) fit 32-bit lanes.
inline constexpr int64_t kMaxWidth = int64_t{1} << 30;

template <int W>
struct Lanes;
template <>
struct Lanes<8> {
  using Pair = F32x16;  // 2W floats: one input row's columns under the chunk
  using Out = F32x8;
  using Mask = I32x8;
  using Index = I64x8;
  static constexpr Index kSteps = {0, 2, 4, 6, 0, 2, 4, 6};  // 2 * (lane within its half)
  static constexpr Index kUpper = {0, 0, 0, 0, 1, 1, 1, 1};  // lanes of the `hi` half
};
template <>
struct Lanes<4> {
  using Pair = F32x8;
  using Out = F32x4;
  using Mask = I32x4;
  using Index = I64x4;
  static constexpr Index kSteps = {0, 2, 0, 2};
  static constexpr Index kUpper = {0, 0, 1, 1};
};

// v's halves from p + lo and p + hi (a vector of N elements; lo, hi in elements). Vectors go
// by reference: by value, GCC warns that the ABI of a 64-byte argument depends on AVX-512.
template <bool kSplit, class V, class E>
[[gnu::always_inline]] inline void load(V& v, const E* p, int64_t lo, int64_t hi) {
  constexpr int N = sizeof(V) / sizeof(E);
  if constexpr (!kSplit) {
    std::memcpy(&v, p + lo, sizeof v);
  } else {
    typedef E H __attribute__((vector_size(sizeof(V) / 2)));
    H a, b;
    std::memcpy(&a, p + lo, sizeof a);
    std::memcpy(&b, p + hi, sizeof b);
    if constexpr (N == 16) {
      v = __builtin_shufflevector(a, b, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    } else if constexpr (N == 8) {
      v = __builtin_shufflevector(a, b, 0, 1, 2, 3, 4, 5, 6, 7);
    } else {
      static_assert(N == 4);
      v = __builtin_shufflevector(a, b, 0, 1, 2, 3);
    }
  }
}

// v's halves to p + lo and p + hi.
template <bool kSplit, class V, class E>
[[gnu::always_inline]] inline void store(E* p, int64_t lo, int64_t hi, const V& v) {
  constexpr int N = sizeof(V) / sizeof(E);
  if constexpr (!kSplit) {
    std::memcpy(p + lo, &v, sizeof v);
  } else {
    typedef E H __attribute__((vector_size(sizeof(V) / 2)));
    H a, b;
    if constexpr (N == 16) {
      a = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7);
      b = __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
    } else if constexpr (N == 8) {
      a = __builtin_shufflevector(v, v, 0, 1, 2, 3);
      b = __builtin_shufflevector(v, v, 4, 5, 6, 7);
    } else {
      static_assert(N == 4);
      a = __builtin_shufflevector(v, v, 0, 1);
      b = __builtin_shufflevector(v, v, 2, 3);
    }
    std::memcpy(p + lo, &a, sizeof a);
    std::memcpy(p + hi, &b, sizeof b);
  }
}

// Each lane's offset from `base` (the row pair's first element) to its window's top-left.
template <int W>
[[gnu::always_inline]] inline void window_starts(typename Lanes<W>::Index& starts, int64_t base,
                                                 int64_t lo, int64_t hi) {
  starts = base + 2 * lo + Lanes<W>::kSteps + Lanes<W>::kUpper * (2 * (hi - lo));
}

// ---- forward ---------------------------------------------------------------------------------

// The chunk's W maxima of input rows r0, r1 into the output row y and its indices (into the
// plane; `base` is r0's offset in it).
template <int W, bool kSplit>
[[gnu::always_inline]] inline void pool_chunk(const float* r0, const float* r1, float* y,
                                              int64_t* index, int64_t lo, int64_t hi, int64_t base,
                                              int32_t in_w) {
  using L = Lanes<W>;
  using M = typename L::Mask;
  using O = typename L::Out;
  typename L::Pair top, bottom;
  load<kSplit>(top, r0, 2 * lo, 2 * hi);
  load<kSplit>(bottom, r1, 2 * lo, 2 * hi);
  O a, b, c, d;
  if constexpr (W == 8) {
    a = __builtin_shufflevector(top, top, 0, 2, 4, 6, 8, 10, 12, 14);
    b = __builtin_shufflevector(top, top, 1, 3, 5, 7, 9, 11, 13, 15);
    c = __builtin_shufflevector(bottom, bottom, 0, 2, 4, 6, 8, 10, 12, 14);
    d = __builtin_shufflevector(bottom, bottom, 1, 3, 5, 7, 9, 11, 13, 15);
  } else {
    a = __builtin_shufflevector(top, top, 0, 2, 4, 6);
    b = __builtin_shufflevector(top, top, 1, 3, 5, 7);
    c = __builtin_shufflevector(bottom, bottom, 0, 2, 4, 6);
    d = __builtin_shufflevector(bottom, bottom, 1, 3, 5, 7);
  }
  M wins = (b > a) | (b != b);
  O best = (O)(((M)b & wins) | ((M)a & ~wins));
  M k = wins & 1;
  wins = (c > best) | (c != c);
  best = (O)(((M)c & wins) | ((M)best & ~wins));
  k = (wins & in_w) | (k & ~wins);
  wins = (d > best) | (d != d);
  best = (O)(((M)d & wins) | ((M)best & ~wins));
  k = (wins & (in_w + 1)) | (k & ~wins);
  typename L::Index starts;
  window_starts<W>(starts, base, lo, hi);
  const typename L::Index k64 = __builtin_convertvector(k, typename L::Index) + starts;
  store<kSplit>(y, lo, hi, best);
  store<kSplit>(index, lo, hi, k64);
}

// One plane; out_w >= W / 2 and in_w <= kMaxWidth.
template <int W>
[[gnu::always_inline]] inline void pool_plane(const float* xs, float* ys, int64_t* is, int64_t in_w,
                                              int64_t out_h, int64_t out_w) {
  for (int64_t oy = 0; oy < out_h; ++oy) {
    const float* r0 = xs + 2 * oy * in_w;
    float* y = ys + oy * out_w;
    int64_t* index = is + oy * out_w;
    const int64_t base = 2 * oy * in_w;
    const auto w = static_cast<int32_t>(in_w);
    if (out_w < W) {
      pool_chunk<W, true>(r0, r0 + in_w, y, index, 0, out_w - W / 2, base, w);
      continue;
    }
    for (int64_t ox = 0;; ox += W) {
      const int64_t o = std::min(ox, out_w - W);
      pool_chunk<W, false>(r0, r0 + in_w, y, index, o, o + W / 2, base, w);
      if (o == out_w - W) break;
    }
  }
}

// ---- backward --------------------------------------------------------------------------------

// The chunk's W gradients (times the mask of their pooled values when kMasked) into the 2W
// columns of input rows r0, r1 they cover: each at its index, zeros around it. Lanes whose
// index is not in their window (an offset from the window's top-left other than 0, 1, in_w,
// in_w + 1) set `outside`.
template <int W, bool kMasked, bool kSplit>
[[gnu::always_inline]] inline void unpool_chunk(const float* g, const int64_t* index,
                                                const float* pooled, float* r0, float* r1,
                                                int64_t lo, int64_t hi, int64_t base, int32_t in_w,
                                                typename Lanes<W>::Mask& outside) {
  using L = Lanes<W>;
  using O = typename L::Out;
  using M = typename L::Mask;
  using I = typename L::Index;
  O v;
  load<kSplit>(v, g, lo, hi);
  v = v + 0.0f;  // the scatter's 0 + g: -0 becomes +0
  if constexpr (kMasked) {
    O p;
    load<kSplit>(p, pooled, lo, hi);
    const O one = O{} + 1.0f;
    v = v * (O)((M)one & (p > 0.0f));  // times 1 or 0, as the unfused multiply
  }
  I k, starts;
  load<kSplit>(k, index, lo, hi);
  window_starts<W>(starts, base, lo, hi);
  k -= starts;
  // The low halves compared, the high halves checked for zero: no index outside the plane
  // passes for one inside it.
  const M low = __builtin_convertvector(k, M), high = __builtin_convertvector(k >> 32, M);
  const M at0 = low == 0, at1 = low == 1, at2 = low == in_w, at3 = low == in_w + 1;
  outside |= ~(at0 | at1 | at2 | at3) | (high != 0);
  const O a = (O)((M)v & at0), b = (O)((M)v & at1), c = (O)((M)v & at2), d = (O)((M)v & at3);
  typename L::Pair top, bottom;
  if constexpr (W == 8) {
    top = __builtin_shufflevector(a, b, 0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
    bottom = __builtin_shufflevector(c, d, 0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
  } else {
    top = __builtin_shufflevector(a, b, 0, 4, 1, 5, 2, 6, 3, 7);
    bottom = __builtin_shufflevector(c, d, 0, 4, 1, 5, 2, 6, 3, 7);
  }
  store<kSplit>(r0, 2 * lo, 2 * hi, top);
  store<kSplit>(r1, 2 * lo, 2 * hi, bottom);
}

// The covered columns [0, 2 * out_w) of every row pair of one plane; out_w >= W / 2 and
// in_w <= kMaxWidth. False when an index lies outside its window.
template <int W, bool kMasked>
[[gnu::always_inline]] inline bool unpool_plane(const float* gs, const int64_t* is, const float* ps,
                                                float* d, int64_t in_w, int64_t out_h,
                                                int64_t out_w) {
  typename Lanes<W>::Mask outside{};
  const auto w = static_cast<int32_t>(in_w);
  for (int64_t oy = 0; oy < out_h; ++oy) {
    float* r0 = d + 2 * oy * in_w;
    const int64_t row = oy * out_w, base = 2 * oy * in_w;
    const float* p = kMasked ? ps + row : nullptr;
    if (out_w < W) {
      unpool_chunk<W, kMasked, true>(gs + row, is + row, p, r0, r0 + in_w, 0, out_w - W / 2, base,
                                     w, outside);
      continue;
    }
    for (int64_t ox = 0;; ox += W) {
      const int64_t o = std::min(ox, out_w - W);
      unpool_chunk<W, kMasked, false>(gs + row, is + row, p, r0, r0 + in_w, o, o + W / 2, base, w,
                                      outside);
      if (o == out_w - W) break;
    }
  }
  int32_t any = 0;
  for (int j = 0; j < W; ++j) any |= outside[j];
  return any == 0;
}

}  // namespace ath::kernels::pool_f32
