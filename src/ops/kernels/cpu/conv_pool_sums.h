// The convolution sums of a few-channel convolution followed by a non-overlapping pool, one
// pooled row at a time: shared by conv_relu_max_pool (conv_pool.cpp, inference: folds each
// window into its max) and conv_relu_max_pool_indices (conv_pool_indices.cpp, training: also
// keeps each window's argmax). A "fold" receives the sums and decides what to keep.
//
// Memory contract: a row reads the task's padded input planes and its output block's filter
// [C][kh][kw][16] and hands its fold 16 output channels' sums per position; nothing is written
// here. Every sum is bias + the taps in (c, kh, kw) order, one fused multiply-add each (std::fma
// in the baseline copy), so every copy gives the same bits whatever the ISA or thread count.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "athanor/core/parallel.h"
#include "athanor/ops/conv.h"
#include "athanor/tensor/tensor.h"
#include "common/isa_dispatch.h"

#if ATH_ISA_MULTI
#include <immintrin.h>
#endif

namespace ath::kernels::conv_pool {

constexpr int64_t kLanes = 16;

// Positions a row's kernels run through: every convolution output of the row's pool windows,
// window by window, with the output slot (pooled column) each folds into. Padded with copies
// of the last position to a multiple of kGroup: a copy adds the same value to the same max
// (and, for the argmax, loses every tie to the original).
constexpr int64_t kGroup = 8;

// The geometry one task (one image, one block of 16 output channels, one pooled row) needs.
struct Task {
  const float* x;  // image n's padded planes [C][HP][WP], from the row's first input row
  const float* w;  // output block's filter [C][kh][kw][16]
  const float* b;  // output block's bias [16]
  int64_t c, kh, kw, hp, wp;
  int64_t positions;     // a multiple of kGroup
  const int64_t* base;   // per position: offset of its first tap in a plane
  const int64_t* slot;   // per position: its pooled column
  const int32_t* plane;  // per position: its convolution output's index in the row's planes
  int64_t window;        // positions per pool window; with 4, every 4 aligned share a slot
};

// fold(p, acc): position p's 16 sums in acc[16].
template <class Fold>
void sum_rows_baseline(const Task& t, Fold&& fold) {
  for (int64_t p = 0; p < t.positions; ++p) {
    float acc[kLanes];
    std::memcpy(acc, t.b, sizeof acc);
    const float* w = t.w;
    for (int64_t c = 0; c < t.c; ++c) {
      for (int64_t i = 0; i < t.kh; ++i) {
        const float* row = t.x + c * t.hp * t.wp + i * t.wp + t.base[p];
        for (int64_t j = 0; j < t.kw; ++j, w += kLanes)
          for (int64_t l = 0; l < kLanes; ++l) acc[l] = std::fma(row[j], w[l], acc[l]);
      }
    }
    fold(p, acc);
  }
}

#if ATH_ISA_MULTI
// fold(p0, lo, hi): positions p0 .. p0 + kGroup / 2 - 1, lanes 0-7 in lo[k] and 8-15 in hi[k]
// (AVX2 has half AVX-512's registers, so half the positions run side by side).
template <class Fold>
ATH_ISA_TARGET_AVX2 [[gnu::always_inline]] inline void sum_rows_avx2(const Task& t, Fold&& fold) {
  constexpr int64_t kG = kGroup / 2;
  for (int64_t p0 = 0; p0 < t.positions; p0 += kG) {
    __m256 lo[kG], hi[kG];
    for (int64_t k = 0; k < kG; ++k) {
      lo[k] = _mm256_loadu_ps(t.b);
      hi[k] = _mm256_loadu_ps(t.b + 8);
    }
    const float* w = t.w;
    for (int64_t c = 0; c < t.c; ++c) {
      for (int64_t i = 0; i < t.kh; ++i) {
        const float* rows = t.x + c * t.hp * t.wp + i * t.wp;
        for (int64_t j = 0; j < t.kw; ++j, w += kLanes) {
          const __m256 w0 = _mm256_loadu_ps(w), w1 = _mm256_loadu_ps(w + 8);
          for (int64_t k = 0; k < kG; ++k) {
            const __m256 x = _mm256_broadcast_ss(rows + t.base[p0 + k] + j);
            lo[k] = _mm256_fmadd_ps(x, w0, lo[k]);
            hi[k] = _mm256_fmadd_ps(x, w1, hi[k]);
          }
        }
      }
    }
    fold(p0, lo, hi);
  }
}

// fold(p0, acc): positions p0 .. p0 + kGroup - 1, one 16-lane vector each.
template <class Fold>
ATH_ISA_TARGET_AVX512 [[gnu::always_inline]] inline void sum_rows_avx512(const Task& t,
                                                                         Fold&& fold) {
  for (int64_t p0 = 0; p0 < t.positions; p0 += kGroup) {
    __m512 acc[kGroup];
    for (int64_t k = 0; k < kGroup; ++k) acc[k] = _mm512_loadu_ps(t.b);
    const float* w = t.w;
    for (int64_t c = 0; c < t.c; ++c) {
      for (int64_t i = 0; i < t.kh; ++i) {
        const float* rows = t.x + c * t.hp * t.wp + i * t.wp;
        for (int64_t j = 0; j < t.kw; ++j, w += kLanes) {
          const __m512 wv = _mm512_loadu_ps(w);
          for (int64_t k = 0; k < kGroup; ++k)
            acc[k] = _mm512_fmadd_ps(_mm512_set1_ps(rows[t.base[p0 + k] + j]), wv, acc[k]);
        }
      }
    }
    fold(p0, acc);
  }
}

// The AVX-512 sums for 3x3 filters (W2's first layer): the taps unrolled and each position's
// address computed once per group rather than per filter row, so the loop is the 72
// multiply-adds of a channel and its 9 weight loads (the general copy spent as long in its
// three-trip inner loops' set-up as in the multiply-adds: 8 us for W2's layer on one thread,
// 3 us after). The same sums in the same order as every other copy.
template <class Fold>
ATH_ISA_TARGET_AVX512 [[gnu::always_inline]] inline void sum_rows_avx512_3x3(const Task& t,
                                                                             Fold&& fold) {
  const int64_t plane = t.hp * t.wp, wp = t.wp;
  for (int64_t p0 = 0; p0 < t.positions; p0 += kGroup) {
    __m512 acc[kGroup];
    const float* px[kGroup];
    for (int64_t k = 0; k < kGroup; ++k) {
      acc[k] = _mm512_loadu_ps(t.b);
      px[k] = t.x + t.base[p0 + k];
    }
    const float* w = t.w;
    for (int64_t c = 0; c < t.c; ++c, w += 9 * kLanes) {
      const int64_t at = c * plane;
#pragma GCC unroll 3
      for (int64_t i = 0; i < 3; ++i) {
        const int64_t row = at + i * wp;
#pragma GCC unroll 3
        for (int64_t j = 0; j < 3; ++j) {
          const __m512 wv = _mm512_loadu_ps(w + (i * 3 + j) * kLanes);
#pragma GCC unroll 8
          for (int64_t k = 0; k < kGroup; ++k)
            acc[k] = _mm512_fmadd_ps(_mm512_set1_ps(px[k][row + j]), wv, acc[k]);
        }
      }
    }
    fold(p0, acc);
  }
}
#endif

// What every row of one call shares: the filter and bias in the rows' layout, the padded input,
// the geometry and the positions of a pooled row. Building it reads the weight once into a
// [O/16][C][kh][kw][16] copy (zero output channels past O) and, when the convolution pads,
// the input once into a zero-padded copy (a few KB an image), so the taps need no bounds checks.
struct RowPlan {
  std::vector<float> weight, bias;  // [blocks][C][kh][kw][16], [blocks][16]
  std::vector<float> padded;        // the padded input, when there is padding
  const float* x = nullptr;         // the padded input [N][C][HP][WP]
  int64_t n = 0, c = 0, o = 0, kh = 0, kw = 0, hp = 0, wp = 0;
  int64_t conv_w = 0;                      // the convolution output's width
  int64_t rows = 0, cols = 0, blocks = 0;  // pooled rows and columns; 16-channel output blocks
  std::array<int64_t, 2> pool{1, 1}, stride{1, 1};
  std::vector<int64_t> base, slot;  // per position of a row (see Task)
  // Per position: its index in the convolution output's plane, less the row's first (ph * pool
  // * conv_w), as max_pool2d's indices count.
  std::vector<int32_t> plane;
  int64_t window = 1;

  // The task of (image, output block, pooled row).
  Task task(int64_t img, int64_t ob, int64_t ph) const {
    return Task{.x = x + img * c * hp * wp + ph * pool[0] * stride[0] * wp,
                .w = weight.data() + ob * c * kh * kw * kLanes,
                .b = bias.data() + ob * kLanes,
                .c = c,
                .kh = kh,
                .kw = kw,
                .hp = hp,
                .wp = wp,
                .positions = static_cast<int64_t>(base.size()),
                .base = base.data(),
                .slot = slot.data(),
                .plane = plane.data(),
                .window = window};
  }
};

// x float32 [N, C, H, W] dense, w [O, C, kh, kw] dense, bias [O] or null; geometry as the ops'
// shape rule checked it.
inline RowPlan make_row_plan(const Tensor& x, const Tensor& w, const Tensor* bias,
                             const ConvAttrs& cv, std::array<int64_t, 2> pool) {
  RowPlan r;
  r.n = x.size(0), r.c = x.size(1), r.o = w.size(0), r.kh = w.size(2), r.kw = w.size(3);
  const int64_t h = x.size(2), wd = x.size(3);
  r.hp = h + cv.pad_l[0] + cv.pad_r[0], r.wp = wd + cv.pad_l[1] + cv.pad_r[1];
  const int64_t conv_h = (r.hp - r.kh) / cv.stride[0] + 1;
  r.conv_w = (r.wp - r.kw) / cv.stride[1] + 1;
  r.rows = conv_h / pool[0], r.cols = r.conv_w / pool[1];
  r.blocks = (r.o + kLanes - 1) / kLanes;
  r.pool = pool, r.stride = cv.stride;
  const int64_t taps = r.c * r.kh * r.kw;
  r.weight.assign(static_cast<std::size_t>(r.blocks * taps * kLanes), 0.0f);
  r.bias.assign(static_cast<std::size_t>(r.blocks * kLanes), 0.0f);
  const float* wsrc = static_cast<const float*>(w.data_ptr());
  for (int64_t oc = 0; oc < r.o; ++oc) {
    for (int64_t tap = 0; tap < taps; ++tap)
      r.weight[static_cast<std::size_t>(((oc / kLanes) * taps + tap) * kLanes + oc % kLanes)] =
          wsrc[oc * taps + tap];
  }
  if (bias != nullptr)
    std::memcpy(r.bias.data(), bias->data_ptr(), static_cast<std::size_t>(r.o) * sizeof(float));
  // A plain loop: the tensor ops' dispatch cost more than the copy at batch 1.
  r.x = static_cast<const float*>(x.data_ptr());
  if (r.hp != h || r.wp != wd) {
    r.padded.assign(static_cast<std::size_t>(r.n * r.c * r.hp * r.wp), 0.0f);
    for (int64_t plane = 0; plane < r.n * r.c; ++plane)
      for (int64_t row = 0; row < h; ++row)
        std::memcpy(r.padded.data() + (plane * r.hp + row + cv.pad_l[0]) * r.wp + cv.pad_l[1],
                    r.x + (plane * h + row) * wd, static_cast<std::size_t>(wd) * sizeof(float));
    r.x = r.padded.data();
  }
  // Each pooled row's positions: the same offsets for every row but a shift of whole rows.
  r.window = pool[0] * pool[1];
  const int64_t positions = (r.cols * r.window + kGroup - 1) / kGroup * kGroup;
  r.base.resize(static_cast<std::size_t>(positions));
  r.slot.resize(static_cast<std::size_t>(positions));
  r.plane.resize(static_cast<std::size_t>(positions));
  for (int64_t p = 0; p < positions; ++p) {
    const int64_t q = std::min(p, r.cols * r.window - 1);  // the padding repeats the last
    const int64_t pw = q / r.window, py = q % r.window / pool[1], px = q % pool[1];
    r.base[static_cast<std::size_t>(p)] =
        py * cv.stride[0] * r.wp + (pw * pool[1] + px) * cv.stride[1];
    r.slot[static_cast<std::size_t>(p)] = pw;
    r.plane[static_cast<std::size_t>(p)] = static_cast<int32_t>(py * r.conv_w + pw * pool[1] + px);
  }
  return r;
}

// Runs every task, in parallel: each chunk of tasks makes one worker = make_worker() (which
// holds its scratch row) and calls worker(img, ob, ph) per task. A task computes cols * pool *
// 16 * C * kh * kw multiply-adds; ~16K make a fork worth it.
template <class MakeWorker>
void run_rows(const RowPlan& r, MakeWorker&& make_worker) {
  const int64_t per_task = r.cols * r.window * kLanes * r.c * r.kh * r.kw;
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(per_task, 1));
  parallel_for(0, r.n * r.blocks * r.rows, grain, [&](int64_t begin, int64_t end) {
    auto worker = make_worker();
    for (int64_t t = begin; t < end; ++t)
      worker(t / (r.rows * r.blocks), (t / r.rows) % r.blocks, t % r.rows);
  });
}

}  // namespace ath::kernels::conv_pool

namespace ath::kernels {

// A block of 16 channels' planes from a task's scratch [plane][16] (conv_pool_indices.cpp):
// y[l][q] = best[q][l] and, unless idx is null, idx[l][q] = won[q][l], for the first `lanes`
// channels. The wide copies gather 16 (8) positions of a lane at a time and write each plane
// front to back (writing 16 pieces of a row to 16 planes took half of the kernel's time).
void write_channel_planes(const float* best, const int32_t* won, int64_t plane, int64_t lanes,
                          float* y, int64_t* idx);

}  // namespace ath::kernels
