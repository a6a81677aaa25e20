// The register-tiled products and the row softmax shared by the self_attention kernels
// (self_attention.cpp: the forward; self_attention_backward.cpp: its gradient). Each head's
// operands sit in dense per-thread scratch blocks whose rows are padded to 16 columns with
// zeros, so every loop runs whole 16-lane vectors (lanes.h) in the copy's register width W.
//
// One product shape covers all five of attention's matrix products:
//   out_r[c0, c0 + 16 C) = mul_r * sum over k < n of a_r[k * as] * b[k * ldb + c0 ...]
// for R rows at once: row r's left operand is read a scalar at a time from a_r with stride as
// (1 for a row, the row length for a column of a matrix, so a transposed product needs no
// transposed copy), the right operand b a row of 16-lane vectors at a time.
// Any tile gives the same bits: each output element is its own chain of multiply-adds in k's
// order. The files that include this contract multiply-adds into FMAs in their wide copies.
#pragma once

#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

#include <algorithm>
#include <cstdint>
#include <limits>

#include "athanor/ops/attention.h"
#include "common/lanes.h"
#include "common/nn_common.h"

namespace ath::kernels::attention_tiles {

// Where a head's rows lie in x (the packed projection [d0, d1, 3E]) and in the output.
struct HeadGeometry {
  int64_t batch = 0, len = 0, heads = 0, d = 0, e = 0;  // e = heads * d
  int64_t d1 = 0;                                       // x's dim 1
  bool batch_first = true;
  // The row (of x and of the output) of sequence position l in batch element b.
  int64_t row(int64_t b, int64_t l) const { return batch_first ? b * d1 + l : l * d1 + b; }
  // How far apart (in rows) a batch element's consecutive positions are.
  int64_t row_step() const { return batch_first ? 1 : d1; }
  int64_t tasks() const { return batch * heads; }  // one per (batch element, head)
  bool empty() const { return tasks() == 0 || len == 0 || d == 0; }

  // The geometry of a packed projection x [d0, d1, 3E] split as a says.
  static HeadGeometry of(const Tensor& x, const SelfAttentionAttrs& a) {
    HeadGeometry g{.heads = a.heads, .d1 = x.size(1), .batch_first = a.batch_first};
    g.batch = a.batch_first ? x.size(0) : x.size(1);
    g.len = a.batch_first ? x.size(1) : x.size(0);
    g.e = x.size(2) / 3;
    g.d = g.e / a.heads;
    return g;
  }
};

constexpr int kRows = 8;  // rows per block (scores and exp rows in scratch at once)

// The register tile of the copy whose vectors hold W floats: kTileRows<W> rows x kTileCols<W>
// 16-lane vectors. AVX-512: 8 x 2 (16 of its 32 zmm as accumulators; 4% faster than 4 x 4);
// AVX2: 4 x 1 (8 ymm, so the loaded row and the broadcast fit beside them in its 16: 8 x 1 and
// 4 x 2, 16 accumulators, ran 14-21% slower on W4's shape); baseline: 2 x 1 (8 xmm; 2 x 2, 4 x 1
// and 4 x 2 ran within noise of it).
template <int W>
inline constexpr int kTileRows = W == 16  ? 8
                                 : W == 8 ? 4
                                          : 2;
template <int W>
inline constexpr int kTileCols = W == 16 ? 2 : 1;

inline int64_t round16(int64_t n) { return (n + kLanes - 1) / kLanes * kLanes; }

// One R x C tile of the product above (mul null: no scaling).
template <int W, int R, int C>
ATH_ISA_BODY void product_tile(const float* const* a, int64_t as, const float* b, int64_t ldb,
                               int64_t n, int64_t c0, const float* mul, float* const* out) {
  F16<W> acc[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) acc[r][c] = vsplat<W>(0.0f);
  for (int64_t k = 0; k < n; ++k) {
    const float* br = b + k * ldb + c0;
    F16<W> bv[C];
    for (int c = 0; c < C; ++c) bv[c] = vload<W>(br + c * kLanes);
    for (int r = 0; r < R; ++r) {
      const float ak = a[r][k * as];
      for (int c = 0; c < C; ++c) acc[r][c] = acc[r][c] + ak * bv[c];
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c)
      vstore(out[r] + c0 + c * kLanes, mul != nullptr ? acc[r][c] * mul[r] : acc[r][c]);
}

// The same tile when row r's left operand is a0 + r * ra and its output out0 + r * ro: one
// pointer and a stride instead of R of each, so the loop's addresses fit the general registers
// (with R pointers of each, GCC kept some of them in vector registers and spilled an
// accumulator to the stack in the loop).
template <int W, int R, int C>
ATH_ISA_BODY void product_tile_strided(const float* a0, int64_t ra, int64_t as, const float* b,
                                       int64_t ldb, int64_t n, int64_t c0, const float* mul,
                                       float* out0, int64_t ro) {
  F16<W> acc[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) acc[r][c] = vsplat<W>(0.0f);
  for (int64_t k = 0; k < n; ++k) {
    const float* br = b + k * ldb + c0;
    const float* ak = a0 + k * as;
    F16<W> bv[C];
    for (int c = 0; c < C; ++c) bv[c] = vload<W>(br + c * kLanes);
    for (int r = 0; r < R; ++r) {
      const float v = ak[r * ra];
      for (int c = 0; c < C; ++c) acc[r][c] = acc[r][c] + v * bv[c];
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c)
      vstore(out0 + r * ro + c0 + c * kLanes, mul != nullptr ? acc[r][c] * mul[r] : acc[r][c]);
}

// Whether p[r] = p[0] + r * step for r < n (step returned through `step`).
template <class P>
inline bool evenly_spaced(P* const* p, int n, int64_t& step) {
  step = n > 1 ? p[1] - p[0] : 0;
  for (int r = 2; r < n; ++r)
    if (p[r] - p[0] != r * step) return false;
  return true;
}

// The tile of rows r0 .. r0 + R - 1, through product_tile_strided when the rows are evenly
// spaced (ra, ro their strides), else product_tile.
template <int W, int R, int C>
ATH_ISA_BODY void product_tile_at(bool spaced, const float* const* a, int64_t ra, int64_t as,
                                  const float* b, int64_t ldb, int64_t n, int64_t c0,
                                  const float* mul, float* const* out, int64_t ro, int r0) {
  const float* m = mul == nullptr ? nullptr : mul + r0;
  if (spaced) {
    product_tile_strided<W, R, C>(a[r0], ra, as, b, ldb, n, c0, m, out[r0], ro);
  } else {
    product_tile<W, R, C>(a + r0, as, b, ldb, n, c0, m, out + r0);
  }
}

// The product for `rows` <= kRows rows over columns [0, cols), cols a multiple of 16. The
// pointer arrays hold kRows entries; rows >= `rows` repeat the last row (same pointers), so a
// tile of repeats only is skipped.
template <int W>
ATH_ISA_BODY void product_rows(const float* const* a, int64_t as, const float* b, int64_t ldb,
                               int64_t n, int64_t cols, int rows, const float* mul,
                               float* const* out) {
  constexpr int R = kTileRows<W>, C = kTileCols<W>;
  static_assert(kRows % R == 0);
  int64_t ra = 0, ro = 0;
  const bool spaced = rows == kRows && evenly_spaced(a, kRows, ra) && evenly_spaced(out, kRows, ro);
  int64_t c0 = 0;
  for (; c0 + C * kLanes <= cols; c0 += C * kLanes)
    for (int r0 = 0; r0 < rows; r0 += R)
      product_tile_at<W, R, C>(spaced, a, ra, as, b, ldb, n, c0, mul, out, ro, r0);
  for (; c0 < cols; c0 += kLanes)
    for (int r0 = 0; r0 < rows; r0 += R)
      product_tile_at<W, R, 1>(spaced, a, ra, as, b, ldb, n, c0, mul, out, ro, r0);
}

// dst[c * dst_ld + r] = scale * src[r * src_ld + c] for r < rows, c < cols: a block of x's rows
// transposed into scratch. 4 x 4 blocks go through registers (SSE's four-row transpose, in every
// copy), not an element at a time: at W4's shape that took self_attention from 523-535 to
// 508-513 us and its backward from 1130-1159 to 1094-1111 us (bench_transformer, AVX-512).
ATH_ISA_BODY void transpose_scaled(const float* src, int64_t src_ld, int64_t rows, int64_t cols,
                                   float scale, float* dst, int64_t dst_ld) {
  int64_t r0 = 0;
#if defined(__SSE2__)
  const __m128 mul = _mm_set1_ps(scale);
  for (; r0 + 4 <= rows; r0 += 4) {
    const float* in = src + r0 * src_ld;
    int64_t c = 0;
    for (; c + 4 <= cols; c += 4) {
      __m128 a = _mm_loadu_ps(in + c), b = _mm_loadu_ps(in + src_ld + c);
      __m128 e = _mm_loadu_ps(in + 2 * src_ld + c), f = _mm_loadu_ps(in + 3 * src_ld + c);
      _MM_TRANSPOSE4_PS(a, b, e, f);
      float* out = dst + c * dst_ld + r0;
      _mm_storeu_ps(out, _mm_mul_ps(mul, a));
      _mm_storeu_ps(out + dst_ld, _mm_mul_ps(mul, b));
      _mm_storeu_ps(out + 2 * dst_ld, _mm_mul_ps(mul, e));
      _mm_storeu_ps(out + 3 * dst_ld, _mm_mul_ps(mul, f));
    }
    for (; c < cols; ++c)
      for (int64_t r = 0; r < 4; ++r) dst[c * dst_ld + r0 + r] = scale * in[r * src_ld + c];
  }
#endif
  for (; r0 < rows; ++r0)
    for (int64_t c = 0; c < cols; ++c) dst[c * dst_ld + r0] = scale * src[r0 * src_ld + c];
}

// A score row made exp(s - max) over its n kept entries, 0 over [n, padded); returns 1 / the
// sum. padded is n rounded up to 16 within the row, so every loop runs whole vectors; max and
// sum meet in lane_max's / lane_sum's 16-lane order (lanes.h), whatever W.
template <int W>
ATH_ISA_BODY float exp_row_f32(float* s, int64_t n, int64_t padded) {
  F16<W> mx = vsplat<W>(-std::numeric_limits<float>::infinity());
  for (int64_t j = 0; j < padded; j += kLanes)  // entries past n do not count
    mx = vmax(mx, vselect(first_lanes<W>(n - j), vload<W>(s + j), mx));
  const float m = hmax(mx);
  for (int64_t j = 0; j < padded; ++j) s[j] = exp_fast(s[j] - m);
  for (int64_t j = n; j < padded; ++j) s[j] = 0.0f;
  F16<W> acc = vsplat<W>(0.0f);
  for (int64_t j = 0; j < padded; j += kLanes) acc = acc + vload<W>(s + j);
  return 1.0f / hsum(acc);
}

}  // namespace ath::kernels::attention_tiles
