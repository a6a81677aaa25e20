// pool_blocked_max.h's kernel. Per output element, the window is scanned row by row and a later
// element wins when greater or NaN — max_pool2d's rule, so a NaN anywhere in a window is the
// result (oneDNN's pooling, which this replaces for these windows, uses vmaxps and can drop it).
// Lanes are the layout's 8 or 16 channels, one or two vector registers per window in the wide
// copies (compare and select: values move as they are, so every copy gives the same bits).
#include "pool_blocked_max.h"

#include <algorithm>
#include <cstring>

#include "common/isa_dispatch.h"

#if ATH_ISA_MULTI
#include <immintrin.h>
#endif

namespace ath::kernels {

namespace {

// The largest input pooled here (see the header).
constexpr int64_t kMaxDirectElements = 65536;

struct Geometry {
  int64_t ih, iw, oh, ow, kh, kw;
};

// Where output element (row, c) of rows laid out plane (image, channel block) after plane reads
// its window: the window's first element, and where its result goes.
template <int B>
[[gnu::always_inline]] inline const float* window_at(const float* x, const Geometry& g, int64_t row,
                                                     int64_t c) {
  const int64_t plane = row / g.oh, r = row % g.oh;
  return x + ((plane * g.ih + r * g.kh) * g.iw + c * g.kw) * B;
}

// Output rows [begin, end), one copy per ISA (a lambda would not inherit the copy's target).
template <int B>
void rows_baseline(const float* x, float* y, const Geometry& g, int64_t begin, int64_t end) {
  for (int64_t row = begin; row < end; ++row) {
    for (int64_t c = 0; c < g.ow; ++c) {
      const float* w0 = window_at<B>(x, g, row, c);
      float m[B];
      std::memcpy(m, w0, sizeof m);
      for (int64_t i = 0; i < g.kh; ++i) {
        for (int64_t j = i == 0 ? 1 : 0; j < g.kw; ++j) {
          const float* v = w0 + (i * g.iw + j) * B;
          for (int l = 0; l < B; ++l) m[l] = v[l] > m[l] || v[l] != v[l] ? v[l] : m[l];
        }
      }
      std::memcpy(y + (row * g.ow + c) * B, m, sizeof m);
    }
  }
}

#if ATH_ISA_MULTI
// v where v > m or v is NaN, else m.
ATH_ISA_TARGET_AVX2 [[gnu::always_inline]] inline __m256 later_max(__m256 m, __m256 v) {
  const __m256 take =
      _mm256_or_ps(_mm256_cmp_ps(v, m, _CMP_GT_OQ), _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  return _mm256_blendv_ps(m, v, take);
}
ATH_ISA_TARGET_AVX512 [[gnu::always_inline]] inline __m512 later_max(__m512 m, __m512 v) {
  const __mmask16 take =
      _mm512_cmp_ps_mask(v, m, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  return _mm512_mask_blend_ps(take, m, v);
}

// 8 lanes at w0 + h of a window whose pixels are B floats apart.
template <int B>
ATH_ISA_TARGET_AVX2 [[gnu::always_inline]] inline void window8(const float* w0, float* out,
                                                               const Geometry& g) {
  __m256 m = _mm256_loadu_ps(w0);
  for (int64_t i = 0; i < g.kh; ++i) {
    for (int64_t j = i == 0 ? 1 : 0; j < g.kw; ++j)
      m = later_max(m, _mm256_loadu_ps(w0 + (i * g.iw + j) * B));
  }
  _mm256_storeu_ps(out, m);
}

template <int B>
ATH_ISA_TARGET_AVX2 void rows_avx2(const float* x, float* y, const Geometry& g, int64_t begin,
                                   int64_t end) {
  for (int64_t row = begin; row < end; ++row) {
    for (int64_t c = 0; c < g.ow; ++c) {
      const float* w0 = window_at<B>(x, g, row, c);
      for (int h = 0; h < B; h += 8) window8<B>(w0 + h, y + (row * g.ow + c) * B + h, g);
    }
  }
}

template <int B>
ATH_ISA_TARGET_AVX512 void rows_avx512(const float* x, float* y, const Geometry& g, int64_t begin,
                                       int64_t end) {
  for (int64_t row = begin; row < end; ++row) {
    for (int64_t c = 0; c < g.ow; ++c) {
      const float* w0 = window_at<B>(x, g, row, c);
      float* out = y + (row * g.ow + c) * B;
      if constexpr (B == 8) {
        window8<8>(w0, out, g);
      } else {
        __m512 m = _mm512_loadu_ps(w0);
        for (int64_t i = 0; i < g.kh; ++i) {
          for (int64_t j = i == 0 ? 1 : 0; j < g.kw; ++j)
            m = later_max(m, _mm512_loadu_ps(w0 + (i * g.iw + j) * 16));
        }
        _mm512_storeu_ps(out, m);
      }
    }
  }
}
#endif

template <int B>
void pool_rows_f32(const float* x, float* y, const Geometry& g, int64_t b, int64_t e) {
#if ATH_ISA_MULTI
  pick_isa_copy(&rows_baseline<B>, &rows_avx2<B>, &rows_avx512<B>)(x, y, g, b, e);
#else
  rows_baseline<B>(x, y, g, b, e);
#endif
}

}  // namespace

bool pool_blocked_max_direct(const Tensor& x, Tensor& y, const PoolBlockedAttrs& a) {
  const bool blocked =
      a.layout == ActivationLayout::Blocked16 || a.layout == ActivationLayout::Blocked8;
  if (!a.max || !blocked || x.dtype() != kFloat32 || x.dim() != 5 || !x.is_contiguous() ||
      !y.is_contiguous() || x.numel() > kMaxDirectElements)
    return false;
  for (std::size_t i = 0; i < 2; ++i) {
    if (a.kernel[i] != a.stride[i] || a.pad_l[i] != 0 || a.pad_r[i] != 0) return false;
  }
  const Shape &xs = x.shape(), &ys = y.shape();
  // Floor windows only (what the op's shape rule gives for these attributes).
  if (ys[2] != xs[2] / a.kernel[0] || ys[3] != xs[3] / a.kernel[1]) return false;
  max_pool_blocked_planes(static_cast<const float*>(x.data_ptr()),
                          static_cast<float*>(y.data_ptr()), ys[0] * ys[1], xs[2], xs[3],
                          a.kernel[0], a.kernel[1], xs[4]);
  return true;
}

void max_pool_blocked_planes(const float* x, float* y, int64_t planes, int64_t ih, int64_t iw,
                             int64_t kh, int64_t kw, int64_t block) {
  const Geometry g{.ih = ih, .iw = iw, .oh = ih / kh, .ow = iw / kw, .kh = kh, .kw = kw};
  if (block == 16)
    pool_rows_f32<16>(x, y, g, 0, planes * g.oh);
  else
    pool_rows_f32<8>(x, y, g, 0, planes * g.oh);
}

}  // namespace ath::kernels
