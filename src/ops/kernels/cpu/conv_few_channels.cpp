// The float32 forward convolution of a network's first layer (where conv_pool_trainable holds:
// one channel, 3x3), eager or compiled: the sums of conv_relu_max_pool(_indices)
// (conv_pool_sums.h), written whole. It
// exists so that a step whose first convolution, ReLU and pool the compiler fuses
// (conv_pool_train) and the same step run eagerly sum every output in one order: without it the
// eager step ran oneDNN's convolution, whose different rounding moved W2's losses by up to 1%
// within 50 Adam steps (a pooled winner flips, and Adam rescales what it changes).
//
// Memory contract: reads x and the weight once into the rows' copies (conv_pool_sums.h) and
// writes every output element once. Work: one task per (image, block of 16 output channels), its
// output rows' sums in a scratch [rows][cols][16] (pool of 1: a window is one position), then
// its 16 planes written whole (write_channel_planes). Bits: bias + the taps in (c, kh, kw)
// order, one fused multiply-add each, on every ISA and thread count; with relu, std::max(s, 0).
#include <algorithm>
#include <vector>

#include "athanor/core/parallel.h"
#include "conv_kernels.h"
#include "conv_pool_sums.h"

namespace ath::kernels {
namespace {

using conv_pool::kGroup;
using conv_pool::kLanes;
using conv_pool::Task;

// Stores each position's sums (after relu when asked) at its slot: with a pool of 1 every
// position is its own slot, and the padding positions repeat the last one's value.
void sums_row_baseline(const Task& t, float* out, bool relu) {
  conv_pool::sum_rows_baseline(t, [&](int64_t p, const float* acc) {
    float* m = out + t.slot[p] * kLanes;
    for (int64_t l = 0; l < kLanes; ++l) m[l] = relu ? std::max(acc[l], 0.0f) : acc[l];
  });
}

#if ATH_ISA_MULTI
struct StoreFoldAvx2 {
  const Task& t;
  float* out;
  bool relu;
  ATH_ISA_TARGET_AVX2 [[gnu::always_inline]] inline void operator()(int64_t p0, const __m256* lo,
                                                                    const __m256* hi) const {
    const __m256 zero = _mm256_setzero_ps();
    for (int64_t k = 0; k < kGroup / 2; ++k) {
      float* m = out + t.slot[p0 + k] * kLanes;
      // max_ps(0, s) is std::max(s, 0): s < 0 ? 0 : s, NaN and -0 passed through.
      _mm256_storeu_ps(m, relu ? _mm256_max_ps(zero, lo[k]) : lo[k]);
      _mm256_storeu_ps(m + 8, relu ? _mm256_max_ps(zero, hi[k]) : hi[k]);
    }
  }
};

struct StoreFoldAvx512 {
  const Task& t;
  float* out;
  bool relu;
  ATH_ISA_TARGET_AVX512 [[gnu::always_inline]] inline void operator()(int64_t p0,
                                                                      const __m512* acc) const {
    const __m512 zero = _mm512_setzero_ps();
    for (int64_t k = 0; k < kGroup; ++k) {
      // (The masked max: the unmasked one trips GCC 12's -Wmaybe-uninitialized.)
      _mm512_storeu_ps(out + t.slot[p0 + k] * kLanes,
                       relu ? _mm512_mask_max_ps(acc[k], 0xFFFF, zero, acc[k]) : acc[k]);
    }
  }
};

ATH_ISA_TARGET_AVX2 void sums_row_avx2(const Task& t, float* out, bool relu) {
  conv_pool::sum_rows_avx2(t, StoreFoldAvx2{t, out, relu});
}
ATH_ISA_TARGET_AVX512 void sums_row_avx512(const Task& t, float* out, bool relu) {
  if (t.kh == 3 && t.kw == 3) {
    conv_pool::sum_rows_avx512_3x3(t, StoreFoldAvx512{t, out, relu});
    return;
  }
  conv_pool::sum_rows_avx512(t, StoreFoldAvx512{t, out, relu});
}
#endif

void sums_row(const Task& t, float* out, bool relu) {
#if ATH_ISA_MULTI
  pick_isa_copy(&sums_row_baseline, &sums_row_avx2, &sums_row_avx512)(t, out, relu);
#else
  sums_row_baseline(t, out, relu);
#endif
}

}  // namespace

bool few_channel_convolution(const ConvGeometry& g) {
  const ConvAttrs& a = g.attrs;
  return conv_pool_trainable(g.c, g.kh, g.kw) && a.groups == 1 && !a.transposed &&
         a.dilation[0] == 1 && a.dilation[1] == 1;
}

bool conv_forward_few_channels(const Tensor& x, const Tensor& w, const Tensor* bias,
                               const Tensor& y, const ConvGeometry& g) {
  if (y.dtype() != kFloat32 || x.dtype() != kFloat32 || w.dtype() != kFloat32 ||
      !few_channel_convolution(g))
    return false;
  const conv_pool::RowPlan r = conv_pool::make_row_plan(x, w, bias, g.attrs, {1, 1});
  float* out = static_cast<float*>(y.data_ptr());
  const int64_t o = r.o, rows = r.rows, cols = r.cols, plane = rows * cols;
  const std::size_t block_size = static_cast<std::size_t>(plane * kLanes);
  const int64_t per_task = plane * kLanes * r.c * r.kh * r.kw;
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(per_task, 1));
  parallel_for(0, r.n * r.blocks, grain, [&](int64_t begin, int64_t end) {
    std::vector<float> sums(block_size);
    for (int64_t t = begin; t < end; ++t) {
      const int64_t img = t / r.blocks, ob = t % r.blocks;
      for (int64_t row = 0; row < rows; ++row)
        sums_row(r.task(img, ob, row), sums.data() + row * cols * kLanes, g.relu);
      write_channel_planes(sums.data(), nullptr, plane, std::min(kLanes, o - ob * kLanes),
                           out + (img * o + ob * kLanes) * plane, nullptr);
    }
  });
  return true;
}

}  // namespace ath::kernels
