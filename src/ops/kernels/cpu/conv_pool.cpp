// CPU kernel for conv_relu_max_pool (ops/conv_pool.h): a first convolution, its ReLU and a
// non-overlapping max pool in one pass, for inference.
//
// Memory contract: reads x once into a zero-padded copy (only when the convolution pads; a few KB
// for an image), reads the weight once into a [O/16][C][kh][kw][16] copy (zero output channels
// past O), and writes every output element once; the convolution's own output is never stored.
// Work: one task per (image, block of 16 output channels, pooled row); a task keeps the pool
// windows' 16-channel sums in registers. Every sum is bias + the taps in (c, kh, kw) order, one
// fused multiply-add each (std::fma in the baseline copy): no result depends on the thread count
// or the ISA.
#include "athanor/ops/conv_pool.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "athanor/core/parallel.h"
#include "common/isa_dispatch.h"
#include "common/nn_common.h"
#include "common/register.h"

#if ATH_ISA_MULTI
#include <immintrin.h>
#endif

namespace ath::kernels {
namespace {

constexpr int64_t kLanes = 16;

// Positions a row's kernels run through: every convolution output of the row's pool windows,
// window by window, with the output slot (pooled column) each folds into. Padded with copies
// of the last position to a multiple of kGroup: a copy adds the same value to the same max.
constexpr int64_t kGroup = 8;

// The geometry one task needs.
struct Task {
  const float* x;  // image n's padded planes [C][HP][WP]
  const float* w;  // output block's filter [C][kh][kw][16]
  const float* b;  // output block's bias [16]
  int64_t c, kh, kw, hp, wp;
  int64_t positions;    // a multiple of kGroup
  const int64_t* base;  // per position: offset of its first tap in a plane
  const int64_t* slot;  // per position: its pooled column
  int64_t window;       // positions per pool window; with 4, every 4 aligned share a slot
};

// One pooled row into out[pw * 16 + lane] (which holds zeros: relu's floor): the max over each
// pool window of its convolution sums, 16 output channels at a time. Written once per ISA with
// its own registers: GCC's vectorizer left a 16-lane max scalar, a lambda would not inherit the
// ISA's target, and one accumulator at a time waited on each multiply-add's latency (12-15 us a
// call for W2's first layer at batch 1); the wide copies run kGroup (AVX-512) or kGroup / 2
// (AVX2, which has half the registers) positions' sums side by side. Every copy computes each
// sum as bias + the taps in (c, kh, kw) order, one fused multiply-add each (std::fma in the
// baseline), so all give the same bits. A NaN sum wins its window, as max_pool2d keeps NaN:
// max_ps returns its second operand (the running max) when either is NaN, so a NaN sum is
// blended back in, and a NaN max stays.
void conv_pool_row_baseline(const Task& t, float* out) {
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
    float* m = out + t.slot[p] * kLanes;
    for (int64_t l = 0; l < kLanes; ++l)
      m[l] = std::isnan(m[l]) ? m[l] : std::isnan(acc[l]) || acc[l] > m[l] ? acc[l] : m[l];
  }
}

#if ATH_ISA_MULTI
// max(a, b), or a where a is NaN (max_ps itself returns b where either is NaN).
ATH_ISA_TARGET_AVX2 [[gnu::always_inline]] inline __m256 max_nan(__m256 a, __m256 b) {
  return _mm256_blendv_ps(_mm256_max_ps(a, b), a, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
}
ATH_ISA_TARGET_AVX512 [[gnu::always_inline]] inline __m512 max_nan(__m512 a, __m512 b) {
  // (The unmasked max trips GCC 12's -Wmaybe-uninitialized.)
  const __m512 r = _mm512_mask_max_ps(b, 0xFFFF, a, b);
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q), r, a);
}

ATH_ISA_TARGET_AVX2 void conv_pool_row_avx2(const Task& t, float* out) {
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
    __m256 cur0 = lo[0], cur1 = hi[0];
    for (int64_t k = 1; k <= kG; ++k) {
      if (k < kG && t.slot[p0 + k] == t.slot[p0 + k - 1]) {
        cur0 = max_nan(lo[k], cur0);
        cur1 = max_nan(hi[k], cur1);
        continue;
      }
      float* m = out + t.slot[p0 + k - 1] * kLanes;
      _mm256_storeu_ps(m, max_nan(cur0, _mm256_loadu_ps(m)));
      _mm256_storeu_ps(m + 8, max_nan(cur1, _mm256_loadu_ps(m + 8)));
      if (k < kG) {
        cur0 = lo[k];
        cur1 = hi[k];
      }
    }
  }
}

// Folds a group's kGroup convolution sums (positions p0...) into their pool windows' maxima in
// out. Positions of one window are adjacent: their max is taken in registers, and each slot is
// read and written once per group (a load of the slot just stored waited on the store); with
// 2x2 pools a group is two whole windows (or a window's copies), reduced without the compares.
ATH_ISA_TARGET_AVX512 [[gnu::always_inline]] inline void fold_group(const Task& t, int64_t p0,
                                                                    const __m512* acc, float* out) {
  if (t.window == 4) {
    for (int64_t k = 0; k < kGroup; k += 4) {
      const __m512 cur = max_nan(acc[k + 3], max_nan(acc[k + 2], max_nan(acc[k + 1], acc[k])));
      float* m = out + t.slot[p0 + k] * kLanes;
      _mm512_storeu_ps(m, max_nan(cur, _mm512_loadu_ps(m)));
    }
    return;
  }
  __m512 cur = acc[0];
  for (int64_t k = 1; k <= kGroup; ++k) {
    if (k < kGroup && t.slot[p0 + k] == t.slot[p0 + k - 1]) {
      cur = max_nan(acc[k], cur);
      continue;
    }
    float* m = out + t.slot[p0 + k - 1] * kLanes;
    _mm512_storeu_ps(m, max_nan(cur, _mm512_loadu_ps(m)));
    if (k < kGroup) cur = acc[k];
  }
}

ATH_ISA_TARGET_AVX512 void conv_pool_row_avx512(const Task& t, float* out) {
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
    fold_group(t, p0, acc, out);
  }
}

// The AVX-512 copy for 3x3 filters (W2's first layer): the taps unrolled and each position's
// address computed once per group rather than per filter row, so the loop is the 72
// multiply-adds of a channel and its 9 weight loads (the general copy spent as long in its
// three-trip inner loops' set-up as in the multiply-adds: 8 us for W2's layer on one thread,
// 3 us after). The same sums in the same order as every other copy.
ATH_ISA_TARGET_AVX512 void conv_pool_row_avx512_3x3(const Task& t, float* out) {
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
    fold_group(t, p0, acc, out);
  }
}
#endif

void conv_pool_row_f32(const Task& t, float* out) {
#if ATH_ISA_MULTI
  if (t.kh == 3 && t.kw == 3) {
    pick_isa_copy(&conv_pool_row_baseline, &conv_pool_row_avx2, &conv_pool_row_avx512_3x3)(t, out);
    return;
  }
  pick_isa_copy(&conv_pool_row_baseline, &conv_pool_row_avx2, &conv_pool_row_avx512)(t, out);
#else
  conv_pool_row_baseline(t, out);
#endif
}

void conv_relu_max_pool_kernel(TensorSpan in, std::span<Tensor> out, const ConvPoolAttrs& a) {
  const Tensor x = dense(in[0]), w = dense(in[1]);
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), wd = x.size(3);
  const int64_t o = w.size(0), kh = w.size(2), kw = w.size(3);
  const ConvAttrs& cv = a.conv;
  const int64_t hp = h + cv.pad_l[0] + cv.pad_r[0], wp = wd + cv.pad_l[1] + cv.pad_r[1];
  const int64_t conv_h = (hp - kh) / cv.stride[0] + 1, conv_w = (wp - kw) / cv.stride[1] + 1;
  const int64_t ph_rows = conv_h / a.pool[0], pw_cols = conv_w / a.pool[1];
  const int64_t blocks = (o + kLanes - 1) / kLanes;

  // The filter as [block][c][kh][kw][16] and the bias as [block][16], zero past O.
  std::vector<float> wt(static_cast<std::size_t>(blocks * c * kh * kw * kLanes), 0.0f);
  std::vector<float> bt(static_cast<std::size_t>(blocks * kLanes), 0.0f);
  const float* wsrc = static_cast<const float*>(w.data_ptr());
  for (int64_t oc = 0; oc < o; ++oc) {
    for (int64_t tap = 0; tap < c * kh * kw; ++tap)
      wt[static_cast<std::size_t>(((oc / kLanes) * c * kh * kw + tap) * kLanes + oc % kLanes)] =
          wsrc[oc * c * kh * kw + tap];
  }
  if (in.size() == 3) {
    const Tensor b = dense(in[2]);
    std::memcpy(bt.data(), b.data_ptr(), static_cast<std::size_t>(o) * sizeof(float));
  }
  // The input with its padding as zeros, so the taps need no bounds checks (a plain loop: the
  // tensor ops' dispatch cost more than the copy at batch 1).
  std::vector<float> padded_copy;
  const float* xp = static_cast<const float*>(x.data_ptr());
  if (hp != h || wp != wd) {
    padded_copy.assign(static_cast<std::size_t>(n * c * hp * wp), 0.0f);
    for (int64_t plane = 0; plane < n * c; ++plane)
      for (int64_t r = 0; r < h; ++r)
        std::memcpy(padded_copy.data() + (plane * hp + r + cv.pad_l[0]) * wp + cv.pad_l[1],
                    xp + (plane * h + r) * wd, static_cast<std::size_t>(wd) * sizeof(float));
    xp = padded_copy.data();
  }
  float* y = static_cast<float*>(out[0].data_ptr());
  const ActivationLayout layout = a.dst_layout;
  const int64_t block = layout == ActivationLayout::Blocked8    ? 8
                        : layout == ActivationLayout::Blocked16 ? 16
                                                                : 0;
  const int64_t out_channels = block > 0 ? (o + block - 1) / block * block : o;
  const int64_t tasks = n * blocks * ph_rows;
  // A task computes pw_cols * pool * 16 * C * kh * kw multiply-adds; ~16K make a fork worth it.
  const int64_t per_task = pw_cols * a.pool[0] * a.pool[1] * kLanes * c * kh * kw;
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(per_task, 1));
  // Each pooled row's positions: the same offsets for every row but a shift of whole rows.
  const int64_t window = a.pool[0] * a.pool[1];
  const int64_t positions = (pw_cols * window + kGroup - 1) / kGroup * kGroup;
  std::vector<int64_t> base(static_cast<std::size_t>(positions)),
      slot(static_cast<std::size_t>(positions));
  for (int64_t p = 0; p < positions; ++p) {
    const int64_t q = std::min(p, pw_cols * window - 1);  // the padding repeats the last
    const int64_t pw = q / window, py = q % window / a.pool[1], px = q % a.pool[1];
    base[static_cast<std::size_t>(p)] =
        py * cv.stride[0] * wp + (pw * a.pool[1] + px) * cv.stride[1];
    slot[static_cast<std::size_t>(p)] = pw;
  }
  parallel_for(0, tasks, grain, [&](int64_t begin, int64_t end) {
    std::vector<float> row(static_cast<std::size_t>(pw_cols * kLanes));
    for (int64_t t = begin; t < end; ++t) {
      const int64_t ph = t % ph_rows, ob = (t / ph_rows) % blocks, img = t / (ph_rows * blocks);
      const Task task{.x = xp + img * c * hp * wp + ph * a.pool[0] * cv.stride[0] * wp,
                      .w = wt.data() + ob * c * kh * kw * kLanes,
                      .b = bt.data() + ob * kLanes,
                      .c = c,
                      .kh = kh,
                      .kw = kw,
                      .hp = hp,
                      .wp = wp,
                      .positions = positions,
                      .base = base.data(),
                      .slot = slot.data(),
                      .window = window};
      std::fill(row.begin(), row.end(), 0.0f);
      conv_pool_row_f32(task, row.data());
      // Lanes past the output's channels (O not a multiple of 16) are dropped; a blocked
      // layout's padding channels get the zeros the padded filter made.
      const int64_t lanes = std::min(kLanes, out_channels - ob * kLanes);
      if (block == kLanes) {  // the row is the output's, as it is
        std::memcpy(y + ((img * blocks + ob) * ph_rows + ph) * pw_cols * kLanes, row.data(),
                    row.size() * sizeof(float));
        continue;
      }
      for (int64_t pw = 0; pw < pw_cols; ++pw) {
        const float* v = row.data() + pw * kLanes;
        for (int64_t l = 0; l < lanes; ++l) {
          const int64_t oc = ob * kLanes + l;
          int64_t at = 0;
          if (layout == ActivationLayout::Nchw) {
            at = ((img * o + oc) * ph_rows + ph) * pw_cols + pw;
          } else if (layout == ActivationLayout::Nhwc) {
            at = ((img * ph_rows + ph) * pw_cols + pw) * o + oc;
          } else {
            at = (((img * (out_channels / block) + oc / block) * ph_rows + ph) * pw_cols + pw) *
                     block +
                 oc % block;
          }
          y[at] = v[l];
        }
      }
    }
  });
}

const bool registered = [] {
  register_cpu<float>(op_conv_relu_max_pool(),
                      []<class T>() { return &conv_relu_max_pool_kernel; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels
