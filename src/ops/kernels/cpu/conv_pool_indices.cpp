// CPU kernel for conv_relu_max_pool_indices (ops/conv_pool.h): a training step's first
// convolution, its ReLU and a non-overlapping max pool in one pass, keeping each window's
// winner for the backward.
//
// Memory contract: reads x and the weight once into the rows' copies (conv_pool_sums.h) and
// writes every pooled value and index once (NCHW); the convolution's output is never stored.
// Work: one task per (image, block of 16 output channels, pooled row); a task keeps a row's
// running maxima and winners in a scratch row (16 floats and 16 int32 per pooled column).
//
// The winner rule is max_pool2d's over relu's output, in the window's row-major order: take a
// value when it is greater than the running max (from -inf) or NaN. So the first of equal
// maxima wins (the common case: a window whose sums are all negative pools relu's zeros, and its
// first position wins), and the last NaN does. relu is std::max(sum, 0): NaN and -0 pass
// through. A run of positions that share a window is reduced in registers and then merged into
// the scratch row by the same rule, which is the sequential rule: the run comes after what the
// row holds for that window.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "athanor/core/parallel.h"
#include "athanor/ops/conv_pool.h"
#include "common/nn_common.h"
#include "common/register.h"
#include "conv_pool_sums.h"

namespace ath::kernels {
namespace {

using conv_pool::kGroup;
using conv_pool::kLanes;
using conv_pool::Task;

// A row's running maxima and winners: best[pw * 16 + lane], won[pw * 16 + lane]; a winner's
// index is first + its position's index in the row (Task::plane).
struct Winners {
  float* best;
  int32_t* won;
  int32_t first;
};

void winners_row_baseline(const Task& t, Winners row) {
  conv_pool::sum_rows_baseline(t, [&](int64_t p, const float* acc) {
    float* best = row.best + t.slot[p] * kLanes;
    int32_t* won = row.won + t.slot[p] * kLanes;
    for (int64_t l = 0; l < kLanes; ++l) {
      const float r = std::max(acc[l], 0.0f);
      if (r > best[l] || std::isnan(r)) {
        best[l] = r;
        won[l] = row.first + t.plane[p];
      }
    }
  });
}

#if ATH_ISA_MULTI
struct WinnerFoldAvx2 {
  const Task& t;
  Winners row;
  // One position's 8 lanes at half h (0 or 1) into the scratch row.
  ATH_ISA_TARGET_AVX2 [[gnu::always_inline]] inline void take(int64_t p, int64_t h,
                                                              __m256 acc) const {
    // max_ps(0, s) is s < 0 ? 0 : s, NaN and -0 passed through: std::max(s, 0).
    const __m256 r = _mm256_max_ps(_mm256_setzero_ps(), acc);
    float* best = row.best + t.slot[p] * kLanes + h * 8;
    float* won = reinterpret_cast<float*>(row.won + t.slot[p] * kLanes + h * 8);
    const __m256 b = _mm256_loadu_ps(best);
    const __m256 wins =
        _mm256_or_ps(_mm256_cmp_ps(r, b, _CMP_GT_OQ), _mm256_cmp_ps(r, r, _CMP_UNORD_Q));
    const __m256 at = _mm256_castsi256_ps(_mm256_set1_epi32(row.first + t.plane[p]));
    _mm256_storeu_ps(best, _mm256_blendv_ps(b, r, wins));
    _mm256_storeu_ps(won, _mm256_blendv_ps(_mm256_loadu_ps(won), at, wins));
  }
  ATH_ISA_TARGET_AVX2 [[gnu::always_inline]] inline void operator()(int64_t p0, const __m256* lo,
                                                                    const __m256* hi) const {
    for (int64_t k = 0; k < kGroup / 2; ++k) {
      take(p0 + k, 0, lo[k]);
      take(p0 + k, 1, hi[k]);
    }
  }
};

struct WinnerFoldAvx512 {
  const Task& t;
  Winners row;
  ATH_ISA_TARGET_AVX512 [[gnu::always_inline]] static inline __mmask16 wins(__m512 r, __m512 b) {
    return _mm512_cmp_ps_mask(r, b, _CMP_GT_OQ) | _mm512_cmp_ps_mask(r, r, _CMP_UNORD_Q);
  }
  // A run's max and winners (best, won) merged into slot s of the scratch row.
  ATH_ISA_TARGET_AVX512 [[gnu::always_inline]] inline void merge(int64_t s, __m512 best,
                                                                 __m512i won) const {
    float* b = row.best + s * kLanes;
    int32_t* w = row.won + s * kLanes;
    const __m512 held = _mm512_loadu_ps(b);
    const __mmask16 m = wins(best, held);
    _mm512_storeu_ps(b, _mm512_mask_blend_ps(m, held, best));
    _mm512_storeu_si512(w, _mm512_mask_blend_epi32(m, _mm512_loadu_si512(w), won));
  }
  // One window of 4 positions (a 2x2 pool), fully unrolled so the sums stay in registers.
  ATH_ISA_TARGET_AVX512 [[gnu::always_inline]] inline void window4(int64_t p,
                                                                   const __m512* acc) const {
    const __m512 zero = _mm512_setzero_ps();
    __m512 best = _mm512_mask_max_ps(acc[0], 0xFFFF, zero, acc[0]);
    __m512i won = _mm512_set1_epi32(row.first + t.plane[p]);
#pragma GCC unroll 3
    for (int64_t k = 1; k < 4; ++k) {
      const __m512 r = _mm512_mask_max_ps(acc[k], 0xFFFF, zero, acc[k]);
      const __mmask16 m = wins(r, best);
      best = _mm512_mask_blend_ps(m, best, r);
      won = _mm512_mask_blend_epi32(m, won, _mm512_set1_epi32(row.first + t.plane[p + k]));
    }
    merge(t.slot[p], best, won);
  }
  ATH_ISA_TARGET_AVX512 [[gnu::always_inline]] inline void operator()(int64_t p0,
                                                                      const __m512* acc) const {
    if (t.window == 4) {
      window4(p0, acc);
      window4(p0 + 4, acc + 4);
      return;
    }
    const __m512 zero = _mm512_setzero_ps();
    __m512 best = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
    __m512i won = _mm512_setzero_si512();
    for (int64_t k = 0; k < kGroup; ++k) {
      const int64_t p = p0 + k;
      // std::max(s, 0), as the AVX2 fold says (the unmasked max trips GCC 12's
      // -Wmaybe-uninitialized).
      const __m512 r = _mm512_mask_max_ps(acc[k], 0xFFFF, zero, acc[k]);
      const __mmask16 m = wins(r, best);
      best = _mm512_mask_blend_ps(m, best, r);
      won = _mm512_mask_blend_epi32(m, won, _mm512_set1_epi32(row.first + t.plane[p]));
      if (k + 1 == kGroup || t.slot[p + 1] != t.slot[p]) {
        merge(t.slot[p], best, won);
        best = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
      }
    }
  }
};

ATH_ISA_TARGET_AVX2 void winners_row_avx2(const Task& t, Winners row) {
  conv_pool::sum_rows_avx2(t, WinnerFoldAvx2{t, row});
}
ATH_ISA_TARGET_AVX512 void winners_row_avx512(const Task& t, Winners row) {
  if (t.kh == 3 && t.kw == 3) {
    conv_pool::sum_rows_avx512_3x3(t, WinnerFoldAvx512{t, row});
    return;
  }
  conv_pool::sum_rows_avx512(t, WinnerFoldAvx512{t, row});
}
#endif

void winners_row(const Task& t, Winners row) {
#if ATH_ISA_MULTI
  pick_isa_copy(&winners_row_baseline, &winners_row_avx2, &winners_row_avx512)(t, row);
#else
  winners_row_baseline(t, row);
#endif
}

// See conv_pool_sums.h.
void write_planes_baseline(const float* best, const int32_t* won, int64_t plane, int64_t lanes,
                           float* y, int64_t* idx) {
  for (int64_t l = 0; l < lanes; ++l)
    for (int64_t q = 0; q < plane; ++q) {
      y[l * plane + q] = best[q * kLanes + l];
      if (idx != nullptr) idx[l * plane + q] = won[q * kLanes + l];
    }
}

#if ATH_ISA_MULTI
ATH_ISA_TARGET_AVX2 void write_planes_avx2(const float* best, const int32_t* won, int64_t plane,
                                           int64_t lanes, float* y, int64_t* idx) {
  const __m256i step = _mm256_setr_epi32(0, 16, 32, 48, 64, 80, 96, 112);
  for (int64_t l = 0; l < lanes; ++l) {
    int64_t q = 0;
    for (; q + 8 <= plane; q += 8) {
      const int64_t at = q * kLanes + l;
      _mm256_storeu_ps(y + l * plane + q, _mm256_i32gather_ps(best + at, step, 4));
      if (idx == nullptr) continue;
      const __m256i w = _mm256_i32gather_epi32(won + at, step, 4);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(idx + l * plane + q),
                          _mm256_cvtepi32_epi64(_mm256_castsi256_si128(w)));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(idx + l * plane + q + 4),
                          _mm256_cvtepi32_epi64(_mm256_extracti128_si256(w, 1)));
    }
    for (; q < plane; ++q) {
      y[l * plane + q] = best[q * kLanes + l];
      if (idx != nullptr) idx[l * plane + q] = won[q * kLanes + l];
    }
  }
}

// r[i] (16 floats each) becomes column i of the 16 x 16 block they held. (Masked forms with
// every lane set: the unmasked unpacks and shuffles trip GCC 12's -Wmaybe-uninitialized.)
ATH_ISA_TARGET_AVX512 [[gnu::always_inline]] inline void transpose16(__m512* r) {
  constexpr __mmask16 all = 0xFFFF;
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    const __m512 a = r[2 * i], b = r[2 * i + 1];
    t[2 * i] = _mm512_mask_unpacklo_ps(a, all, a, b);
    t[2 * i + 1] = _mm512_mask_unpackhi_ps(a, all, a, b);
  }
  for (int i = 0; i < 4; ++i) {
    const __m512 a = t[4 * i], b = t[4 * i + 1], c = t[4 * i + 2], d = t[4 * i + 3];
    r[4 * i + 0] = _mm512_mask_shuffle_ps(a, all, a, c, 0x44);
    r[4 * i + 1] = _mm512_mask_shuffle_ps(a, all, a, c, 0xEE);
    r[4 * i + 2] = _mm512_mask_shuffle_ps(b, all, b, d, 0x44);
    r[4 * i + 3] = _mm512_mask_shuffle_ps(b, all, b, d, 0xEE);
  }
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 4; ++j) {
      const __m512 a = r[8 * i + j], b = r[8 * i + j + 4];
      t[8 * i + j] = _mm512_mask_shuffle_f32x4(a, all, a, b, 0x88);
      t[8 * i + j + 4] = _mm512_mask_shuffle_f32x4(a, all, a, b, 0xDD);
    }
  }
  for (int j = 0; j < 8; ++j) {
    const __m512 a = t[j], b = t[j + 8];
    r[j] = _mm512_mask_shuffle_f32x4(a, all, a, b, 0x88);
    r[j + 8] = _mm512_mask_shuffle_f32x4(a, all, a, b, 0xDD);
  }
}

// 16 int32 lanes widened into idx[0..15] (the first `m` of them).
ATH_ISA_TARGET_AVX512 [[gnu::always_inline]] inline void store_widened(int64_t* idx, __mmask16 m,
                                                                       __m512i w) {
  // (Masked forms throughout: the unmasked extract and widen trip GCC 12's
  // -Wmaybe-uninitialized.)
  const __m256i z = _mm256_setzero_si256();
  const __m512i zero = _mm512_setzero_si512();
  _mm512_mask_storeu_epi64(
      idx, static_cast<__mmask8>(m),
      _mm512_mask_cvtepi32_epi64(zero, 0xFF, _mm512_mask_extracti64x4_epi64(z, 0xF, w, 0)));
  _mm512_mask_storeu_epi64(
      idx + 8, static_cast<__mmask8>(m >> 8),
      _mm512_mask_cvtepi32_epi64(zero, 0xFF, _mm512_mask_extracti64x4_epi64(z, 0xF, w, 1)));
}

// Whole blocks of 16 positions through an in-register transpose (the gathers alone took twice
// the sums' time for a first convolution's full output); the rest gathered, masked.
ATH_ISA_TARGET_AVX512 void write_planes_avx512(const float* best, const int32_t* won, int64_t plane,
                                               int64_t lanes, float* y, int64_t* idx) {
  int64_t q0 = 0;
  for (; q0 + 16 <= plane; q0 += 16) {
    __m512 r[16];
    for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(best + (q0 + i) * kLanes);
    transpose16(r);
    for (int64_t l = 0; l < lanes; ++l) _mm512_storeu_ps(y + l * plane + q0, r[l]);
    if (idx == nullptr) continue;
    for (int i = 0; i < 16; ++i)
      r[i] = _mm512_castsi512_ps(_mm512_loadu_si512(won + (q0 + i) * kLanes));
    transpose16(r);
    for (int64_t l = 0; l < lanes; ++l)
      store_widened(idx + l * plane + q0, 0xFFFF, _mm512_castps_si512(r[l]));
  }
  if (q0 == plane) return;
  const __m512i step =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(16));
  const __mmask16 m = static_cast<__mmask16>((1u << (plane - q0)) - 1);
  for (int64_t l = 0; l < lanes; ++l) {
    const int64_t at = q0 * kLanes + l;
    _mm512_mask_storeu_ps(y + l * plane + q0, m,
                          _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, step, best + at, 4));
    if (idx != nullptr)
      store_widened(idx + l * plane + q0, m,
                    _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, step, won + at, 4));
  }
}
#endif

}  // namespace

void write_channel_planes(const float* best, const int32_t* won, int64_t plane, int64_t lanes,
                          float* y, int64_t* idx) {
#if ATH_ISA_MULTI
  pick_isa_copy(&write_planes_baseline, &write_planes_avx2, &write_planes_avx512)(best, won, plane,
                                                                                  lanes, y, idx);
#else
  write_planes_baseline(best, won, plane, lanes, y, idx);
#endif
}

namespace {

void conv_relu_max_pool_indices_kernel(TensorSpan in, std::span<Tensor> out,
                                       const ConvPoolAttrs& a) {
  const Tensor x = dense(in[0]), w = dense(in[1]);
  const Tensor bias = in.size() == 3 ? dense(in[2]) : Tensor();
  const conv_pool::RowPlan r =
      conv_pool::make_row_plan(x, w, in.size() == 3 ? &bias : nullptr, a.conv, a.pool);
  float* y = static_cast<float*>(out[0].data_ptr());
  int64_t* idx = static_cast<int64_t*>(out[1].data_ptr());
  const int64_t o = r.o, rows = r.rows, cols = r.cols, plane = rows * cols;
  // One task per (image, output block): its rows' winners go to a scratch [rows][cols][16],
  // then each of its 16 channels' planes is written whole, front to back (a task per pooled
  // row wrote 16 pieces of 14 values to 16 planes, half of the kernel's time at W2's shape).
  const std::size_t block_size = static_cast<std::size_t>(plane * kLanes);
  const int64_t per_task = plane * r.window * kLanes * r.c * r.kh * r.kw;
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(per_task, 1));
  parallel_for(0, r.n * r.blocks, grain, [&](int64_t begin, int64_t end) {
    std::vector<float> best(block_size);
    std::vector<int32_t> won(block_size);
    for (int64_t t = begin; t < end; ++t) {
      const int64_t img = t / r.blocks, ob = t % r.blocks;
      // (Every slot's first position always wins against -inf, so won needs no fill.)
      std::fill(best.begin(), best.end(), -std::numeric_limits<float>::infinity());
      for (int64_t ph = 0; ph < rows; ++ph) {
        // The row's indices count from its first (ph * pool * conv_w) on.
        winners_row(r.task(img, ob, ph),
                    Winners{best.data() + ph * cols * kLanes, won.data() + ph * cols * kLanes,
                            static_cast<int32_t>(ph * r.pool[0] * r.conv_w)});
      }
      const int64_t at = (img * o + ob * kLanes) * plane;
      write_channel_planes(best.data(), won.data(), plane, std::min(kLanes, o - ob * kLanes),
                           y + at, idx + at);
    }
  });
}

const bool registered = [] {
  register_cpu<float>(op_conv_relu_max_pool_indices(),
                      []<class T>() { return &conv_relu_max_pool_indices_kernel; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels
