// CPU kernel for conv_relu_max_pool (ops/conv_pool.h): a first convolution, its ReLU and a
// non-overlapping max pool in one pass, for inference.
//
// Memory contract: reads x and the weight once into the rows' copies (conv_pool_sums.h) and
// writes every output element once; the convolution's own output is never stored. Work: one task
// per (image, block of 16 output channels, pooled row); a task keeps the pool windows'
// 16-channel sums in registers (conv_pool_sums.h: the same bits on every ISA and thread count).
#include "athanor/ops/conv_pool.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "common/nn_common.h"
#include "common/register.h"
#include "conv_pool_sums.h"

namespace ath::kernels {
namespace {

using conv_pool::kGroup;
using conv_pool::kLanes;
using conv_pool::Task;

// The folds below take each pool window's max of the sums into out[pw * 16 + lane], which holds
// zeros (relu's floor) at the start of a row. A NaN sum wins its window, as max_pool2d keeps NaN:
// max_ps returns its second operand (the running max) when either is NaN, so a NaN sum is
// blended back in, and a NaN max stays. The wide folds are functors whose call operator carries
// its ISA's target (a lambda would not inherit it).
void conv_pool_row_baseline(const Task& t, float* out) {
  conv_pool::sum_rows_baseline(t, [&](int64_t p, const float* acc) {
    float* m = out + t.slot[p] * kLanes;
    for (int64_t l = 0; l < kLanes; ++l)
      m[l] = std::isnan(m[l]) ? m[l] : std::isnan(acc[l]) || acc[l] > m[l] ? acc[l] : m[l];
  });
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

struct MaxFoldAvx2 {
  const Task& t;
  float* out;
  ATH_ISA_TARGET_AVX2 [[gnu::always_inline]] inline void operator()(int64_t p0, const __m256* lo,
                                                                    const __m256* hi) const {
    constexpr int64_t kG = kGroup / 2;
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
};

// Folds a group's kGroup sums into their windows' maxima. Positions of one window are adjacent:
// their max is taken in registers, and each slot is read and written once per group (a load of
// the slot just stored waited on the store); with 2x2 pools a group is two whole windows (or a
// window's copies), reduced without the compares.
struct MaxFoldAvx512 {
  const Task& t;
  float* out;
  ATH_ISA_TARGET_AVX512 [[gnu::always_inline]] inline void operator()(int64_t p0,
                                                                      const __m512* acc) const {
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
};

ATH_ISA_TARGET_AVX2 void conv_pool_row_avx2(const Task& t, float* out) {
  conv_pool::sum_rows_avx2(t, MaxFoldAvx2{t, out});
}
ATH_ISA_TARGET_AVX512 void conv_pool_row_avx512(const Task& t, float* out) {
  if (t.kh == 3 && t.kw == 3) {
    conv_pool::sum_rows_avx512_3x3(t, MaxFoldAvx512{t, out});
    return;
  }
  conv_pool::sum_rows_avx512(t, MaxFoldAvx512{t, out});
}
#endif

void conv_pool_row_f32(const Task& t, float* out) {
#if ATH_ISA_MULTI
  pick_isa_copy(&conv_pool_row_baseline, &conv_pool_row_avx2, &conv_pool_row_avx512)(t, out);
#else
  conv_pool_row_baseline(t, out);
#endif
}

void conv_relu_max_pool_kernel(TensorSpan in, std::span<Tensor> out, const ConvPoolAttrs& a) {
  const Tensor x = dense(in[0]), w = dense(in[1]);
  const Tensor bias = in.size() == 3 ? dense(in[2]) : Tensor();
  const conv_pool::RowPlan r =
      conv_pool::make_row_plan(x, w, in.size() == 3 ? &bias : nullptr, a.conv, a.pool);
  float* y = static_cast<float*>(out[0].data_ptr());
  const ActivationLayout layout = a.dst_layout;
  const int64_t block = layout == ActivationLayout::Blocked8    ? 8
                        : layout == ActivationLayout::Blocked16 ? 16
                                                                : 0;
  const int64_t o = r.o, rows = r.rows, cols = r.cols, blocks = r.blocks;
  const int64_t out_channels = block > 0 ? (o + block - 1) / block * block : o;
  conv_pool::run_rows(r, [&] {
    return [&, row = std::vector<float>(static_cast<std::size_t>(cols * kLanes))](
               int64_t img, int64_t ob, int64_t ph) mutable {
      std::fill(row.begin(), row.end(), 0.0f);
      conv_pool_row_f32(r.task(img, ob, ph), row.data());
      // Lanes past the output's channels (O not a multiple of 16) are dropped; a blocked
      // layout's padding channels get the zeros the padded filter made.
      const int64_t lanes = std::min(kLanes, out_channels - ob * kLanes);
      if (block == kLanes) {  // the row is the output's, as it is
        std::memcpy(y + ((img * blocks + ob) * rows + ph) * cols * kLanes, row.data(),
                    row.size() * sizeof(float));
        return;
      }
      for (int64_t pw = 0; pw < cols; ++pw) {
        const float* v = row.data() + pw * kLanes;
        for (int64_t l = 0; l < lanes; ++l) {
          const int64_t oc = ob * kLanes + l;
          int64_t at = 0;
          if (layout == ActivationLayout::Nchw) {
            at = ((img * o + oc) * rows + ph) * cols + pw;
          } else if (layout == ActivationLayout::Nhwc) {
            at = ((img * rows + ph) * cols + pw) * o + oc;
          } else {
            at = (((img * (out_channels / block) + oc / block) * rows + ph) * cols + pw) * block +
                 oc % block;
          }
          y[at] = v[l];
        }
      }
    };
  });
}

const bool registered = [] {
  register_cpu<float>(op_conv_relu_max_pool(),
                      []<class T>() { return &conv_relu_max_pool_kernel; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels
