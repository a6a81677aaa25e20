// CPU kernels for max/avg/adaptive-avg pooling and their backward ops. One thread owns each
// (n, c) plane, so scatters need no atomics and sums keep a fixed order (results do not depend
// on the thread count). Values compute in float (double for double).
// Memory contract: inputs are read (made contiguous first); every output element is written
// (the backward ops zero their output plane, then add into it).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "athanor/core/loop_hints.h"
#include "athanor/core/parallel.h"
#include "athanor/ops/conv.h"
#include "common/isa_dispatch.h"
#include "common/register.h"

namespace ath::kernels {

namespace {

struct Planes {
  int64_t count, in_h, in_w, out_h, out_w;
};

Planes planes(const Tensor& in, const Tensor& out) {
  return {in.shape()[0] * in.shape()[1], in.shape()[2], in.shape()[3], out.shape()[2],
          out.shape()[3]};
}

// Runs fn(plane) over all planes, a few per task.
template <class Fn>
void for_planes(int64_t count, int64_t plane_work, Fn&& fn) {
  parallel_for(0, count, std::max<int64_t>(1, 32768 / std::max<int64_t>(plane_work, 1)),
               [&](int64_t b, int64_t e) {
                 for (int64_t p = b; p < e; ++p) fn(p);
               });
}

// ---- max pooling -----------------------------------------------------------------------------

// The 2x2 window with stride 2 and no padding or dilation (nearly every CNN's pooling), with
// the general loop's exact comparisons: scan order (0,0) (0,1) (1,0) (1,1), the first maximum
// wins, a NaN wins (the last one, as in the general loop).
template <class T, class C>
__attribute__((always_inline)) inline void max_pool_2x2_plane(const T* __restrict xs,
                                                              T* __restrict ys,
                                                              int64_t* __restrict is, int64_t in_w,
                                                              int64_t out_h, int64_t out_w) {
  for (int64_t oy = 0; oy < out_h; ++oy) {
    const T* __restrict r0 = xs + 2 * oy * in_w;
    const T* __restrict r1 = r0 + in_w;
    T* __restrict yr = ys + oy * out_w;
    int64_t* __restrict ir = is + oy * out_w;
    const int64_t base = 2 * oy * in_w;
    // Branch-free selects (the compiler vectorizes them): starting from the first element is
    // the general loop's "-inf, then take v if v > best or v is NaN" for every input.
    ATH_IVDEP
    for (int64_t ox = 0; ox < out_w; ++ox) {
      // The stored value is the winning input itself (raw: no round trip through C, which for
      // bfloat16 would be a rounding the compiler cannot see is exact).
      const T ra = r0[2 * ox], rb = r0[2 * ox + 1], rc = r1[2 * ox], rd = r1[2 * ox + 1];
      const C a = static_cast<C>(ra), b = static_cast<C>(rb);
      const C c = static_cast<C>(rc), d = static_cast<C>(rd);
      C best = a;
      T raw = ra;
      int64_t k = 0;
      const bool tb = (b > best) | (b != b);
      best = tb ? b : best;
      raw = tb ? rb : raw;
      k = tb ? 1 : k;
      const bool tc = (c > best) | (c != c);
      best = tc ? c : best;
      raw = tc ? rc : raw;
      k = tc ? in_w : k;
      const bool td = (d > best) | (d != d);
      raw = td ? rd : raw;
      k = td ? in_w + 1 : k;
      yr[ox] = raw;
      ir[ox] = base + 2 * ox + k;
    }
  }
}

// float32, the training case: explicit vectors of 8 (or 4) outputs, compiled per ISA. Left to
// the auto-vectorizer the loop above ran scalar at CNN sizes (a 14-wide output row is shorter
// than one 16-lane vector: 14% of a W2 step). A row's last chunk starts at out_w - W and
// overlaps the one before it: it recomputes the same values, so no scalar tail is needed.
typedef float F32x16 __attribute__((vector_size(64)));
typedef float F32x8 __attribute__((vector_size(32)));
typedef float F32x4 __attribute__((vector_size(16)));
typedef int32_t I32x8 __attribute__((vector_size(32)));
typedef int32_t I32x4 __attribute__((vector_size(16)));
typedef int64_t I64x8 __attribute__((vector_size(64)));
typedef int64_t I64x4 __attribute__((vector_size(32)));
template <int W>
struct PoolLanes;
template <>
struct PoolLanes<8> {
  using In = F32x16;  // 2W inputs of one row
  using Out = F32x8;
  using Mask = I32x8;
  using Index = I64x8;
};
template <>
struct PoolLanes<4> {
  using In = F32x8;
  using Out = F32x4;
  using Mask = I32x4;
  using Index = I64x4;
};

// W outputs of one row from rows r0, r1 (2W floats each): the scalar loop's comparisons lane by
// lane (a later candidate wins when greater or NaN), so results are bit-identical to it.
template <int W>
ATH_ISA_BODY void max_pool_2x2_chunk_f32(const float* r0, const float* r1, float* y, int64_t* index,
                                         int64_t first, int64_t in_w) {
  using L = PoolLanes<W>;
  typename L::In top, bottom;
  std::memcpy(&top, r0, sizeof top);
  std::memcpy(&bottom, r1, sizeof bottom);
  typename L::Out a, b, c, d;
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
  using M = typename L::Mask;
  using O = typename L::Out;
  using I = typename L::Index;
  M wins = (b > a) | (b != b);
  O best = (O)(((M)b & wins) | ((M)a & ~wins));
  I k = __builtin_convertvector(wins, I) & 1;
  wins = (c > best) | (c != c);
  best = (O)(((M)c & wins) | ((M)best & ~wins));
  I take = __builtin_convertvector(wins, I);
  k = (take & in_w) | (k & ~take);
  wins = (d > best) | (d != d);
  best = (O)(((M)d & wins) | ((M)best & ~wins));
  take = __builtin_convertvector(wins, I);
  k = (take & (in_w + 1)) | (k & ~take);
  for (int j = 0; j < W; ++j) k[j] += first + 2 * j;
  std::memcpy(y, &best, sizeof best);
  std::memcpy(index, &k, sizeof k);
}

template <int W>
ATH_ISA_BODY void max_pool_2x2_rows_f32(const float* xs, float* ys, int64_t* is, int64_t in_w,
                                        int64_t out_h, int64_t out_w) {
  for (int64_t oy = 0; oy < out_h; ++oy) {
    const float* r0 = xs + 2 * oy * in_w;
    const int64_t base = 2 * oy * in_w;
    for (int64_t ox = 0;; ox += W) {
      const int64_t o = std::min(ox, out_w - W);
      max_pool_2x2_chunk_f32<W>(r0 + 2 * o, r0 + in_w + 2 * o, ys + oy * out_w + o,
                                is + oy * out_w + o, base + 2 * o, in_w);
      if (o == out_w - W) break;
    }
  }
}

ATH_ISA_BODY void max_pool_2x2_plane_f32_body(const float* xs, float* ys, int64_t* is, int64_t in_w,
                                              int64_t out_h, int64_t out_w) {
  if (out_w >= 8) return max_pool_2x2_rows_f32<8>(xs, ys, is, in_w, out_h, out_w);
  if (out_w >= 4) return max_pool_2x2_rows_f32<4>(xs, ys, is, in_w, out_h, out_w);
  max_pool_2x2_plane<float, float>(xs, ys, is, in_w, out_h, out_w);
}
ATH_ISA_DISPATCH(max_pool_2x2_plane_f32,
                 (const float* xs, float* ys, int64_t* is, int64_t in_w, int64_t out_h,
                  int64_t out_w),
                 (xs, ys, is, in_w, out_h, out_w))
// bfloat16, the bf16-mixed training case (17% of a W2 step as the baseline loop).
ATH_ISA_BODY void max_pool_2x2_plane_bf16_body(const BFloat16* xs, BFloat16* ys, int64_t* is,
                                               int64_t in_w, int64_t out_h, int64_t out_w) {
  max_pool_2x2_plane<BFloat16, float>(xs, ys, is, in_w, out_h, out_w);
}
ATH_ISA_DISPATCH(max_pool_2x2_plane_bf16,
                 (const BFloat16* xs, BFloat16* ys, int64_t* is, int64_t in_w, int64_t out_h,
                  int64_t out_w),
                 (xs, ys, is, in_w, out_h, out_w))

// float16, the 16-mixed case (with Half's branch-free widening the selects vectorize too).
ATH_ISA_BODY void max_pool_2x2_plane_f16_body(const Half* xs, Half* ys, int64_t* is, int64_t in_w,
                                              int64_t out_h, int64_t out_w) {
  max_pool_2x2_plane<Half, float>(xs, ys, is, in_w, out_h, out_w);
}
ATH_ISA_DISPATCH(max_pool_2x2_plane_f16,
                 (const Half* xs, Half* ys, int64_t* is, int64_t in_w, int64_t out_h,
                  int64_t out_w),
                 (xs, ys, is, in_w, out_h, out_w))

template <class T>
void max_pool_kernel(TensorSpan in, std::span<Tensor> out, const MaxPool2dAttrs& a) {
  using C = compute_t<T>;
  Tensor x = in[0].contiguous();
  const Planes p = planes(x, out[0]);
  const T* xp = static_cast<const T*>(x.data_ptr());
  T* yp = static_cast<T*>(out[0].data_ptr());
  int64_t* ip = static_cast<int64_t*>(out[1].data_ptr());
  // Locals, not reads through `a` and `p` inside the loop: the int64 index stores could alias
  // them, which made the compiler reload every bound per output element.
  const int64_t in_h = p.in_h, in_w = p.in_w, out_h = p.out_h, out_w = p.out_w;
  const int64_t kh = a.kernel[0], kw = a.kernel[1], sh = a.stride[0], sw = a.stride[1];
  const int64_t ph = a.padding[0], pw = a.padding[1], dh = a.dilation[0], dw = a.dilation[1];
  const bool two_by_two = kh == 2 && kw == 2 && sh == 2 && sw == 2 && ph == 0 && pw == 0 &&
                          dh == 1 && dw == 1 && 2 * out_h <= in_h && 2 * out_w <= in_w;
  for_planes(p.count, in_h * in_w, [&](int64_t pl) {
    const T* xs = xp + pl * in_h * in_w;
    T* ys = yp + pl * out_h * out_w;
    int64_t* is = ip + pl * out_h * out_w;
    if (two_by_two) {
      if constexpr (std::is_same_v<T, float>) {
        max_pool_2x2_plane_f32(xs, ys, is, in_w, out_h, out_w);
      } else if constexpr (std::is_same_v<T, BFloat16>) {
        max_pool_2x2_plane_bf16(xs, ys, is, in_w, out_h, out_w);
      } else if constexpr (std::is_same_v<T, Half>) {
        max_pool_2x2_plane_f16(xs, ys, is, in_w, out_h, out_w);
      } else {
        max_pool_2x2_plane<T, C>(xs, ys, is, in_w, out_h, out_w);
      }
      return;
    }
    for (int64_t oy = 0; oy < out_h; ++oy) {
      int64_t y0 = oy * sh - ph;
      const int64_t y1 = std::min(y0 + (kh - 1) * dh + 1, in_h);
      while (y0 < 0) y0 += dh;
      for (int64_t ox = 0; ox < out_w; ++ox) {
        int64_t x0 = ox * sw - pw;
        const int64_t x1 = std::min(x0 + (kw - 1) * dw + 1, in_w);
        while (x0 < 0) x0 += dw;
        C best = -std::numeric_limits<C>::infinity();
        int64_t best_i = y0 * in_w + x0;
        for (int64_t iy = y0; iy < y1; iy += dh)
          for (int64_t ix = x0; ix < x1; ix += dw) {
            const C v = static_cast<C>(xs[iy * in_w + ix]);
            if (v > best || std::isnan(v)) {  // NaN wins, as in PyTorch
              best = v;
              best_i = iy * in_w + ix;
            }
          }
        ys[oy * out_w + ox] = static_cast<T>(best);
        is[oy * out_w + ox] = best_i;
      }
    }
  });
}

// Checks an index before it is used to address a plane.
inline int64_t checked(int64_t i, int64_t plane) {
  ATH_CHECK(i >= 0 && i < plane, IndexError, "index {} is out of range for a plane of {} elements",
            i, plane);
  return i;
}

template <class T>
void max_pool_backward_kernel(TensorSpan in, std::span<Tensor> out, const PoolGradAttrs&) {
  using C = compute_t<T>;
  Tensor g = in[0].contiguous(), idx = in[1].contiguous();
  const Planes p = planes(out[0], g);
  const T* gp = static_cast<const T*>(g.data_ptr());
  const int64_t* ip = static_cast<const int64_t*>(idx.data_ptr());
  T* dx = static_cast<T*>(out[0].data_ptr());
  const int64_t in_plane = p.in_h * p.in_w, out_plane = p.out_h * p.out_w;
  for_planes(p.count, in_plane + out_plane, [&](int64_t pl) {
    if constexpr (std::is_same_v<T, C>) {
      // float, double: accumulate in the output plane itself (no scratch to allocate).
      T* d = dx + pl * in_plane;
      std::fill(d, d + in_plane, T(0));
      for (int64_t j = 0; j < out_plane; ++j)
        d[checked(ip[pl * out_plane + j], in_plane)] += gp[pl * out_plane + j];
    } else {
      // Accumulate in compute precision, then round once per element.
      thread_local std::vector<C> acc;
      acc.assign(static_cast<std::size_t>(in_plane), C(0));
      for (int64_t j = 0; j < out_plane; ++j) {
        const int64_t i = checked(ip[pl * out_plane + j], in_plane);
        acc[static_cast<std::size_t>(i)] += static_cast<C>(gp[pl * out_plane + j]);
      }
      for (int64_t i = 0; i < in_plane; ++i)
        dx[pl * in_plane + i] = static_cast<T>(acc[static_cast<std::size_t>(i)]);
    }
  });
}

// max_pool_backward_kernel, then each winner times (pooled > 0): 1 or 0 exactly, after the
// sums, so the bits equal the unfused scatter followed by the mask-multiply. A winner of several
// windows is multiplied once per window by the same factor (x*1*1 = x, x*0*0 = x*0).
template <class T>
void max_pool_backward_masked_kernel(TensorSpan in, std::span<Tensor> out, const PoolGradAttrs&) {
  using C = compute_t<T>;
  Tensor g = in[0].contiguous(), idx = in[1].contiguous(), pooled = in[2].contiguous();
  const Planes p = planes(out[0], g);
  const T* gp = static_cast<const T*>(g.data_ptr());
  const int64_t* ip = static_cast<const int64_t*>(idx.data_ptr());
  const T* pv = static_cast<const T*>(pooled.data_ptr());
  T* dx = static_cast<T*>(out[0].data_ptr());
  const int64_t in_plane = p.in_h * p.in_w, out_plane = p.out_h * p.out_w;
  for_planes(p.count, in_plane + out_plane, [&](int64_t pl) {
    const int64_t* is = ip + pl * out_plane;
    const T* gs = gp + pl * out_plane;
    const T* ps = pv + pl * out_plane;
    T* d = dx + pl * in_plane;
    if constexpr (std::is_same_v<T, C>) {
      std::fill(d, d + in_plane, T(0));
      for (int64_t j = 0; j < out_plane; ++j) d[checked(is[j], in_plane)] += gs[j];
      for (int64_t j = 0; j < out_plane; ++j) d[is[j]] *= ps[j] > T(0) ? T(1) : T(0);
    } else {
      thread_local std::vector<C> acc;
      acc.assign(static_cast<std::size_t>(in_plane), C(0));
      for (int64_t j = 0; j < out_plane; ++j)
        acc[static_cast<std::size_t>(checked(is[j], in_plane))] += static_cast<C>(gs[j]);
      for (int64_t i = 0; i < in_plane; ++i)
        d[i] = static_cast<T>(acc[static_cast<std::size_t>(i)]);
      for (int64_t j = 0; j < out_plane; ++j) {
        const bool keep = static_cast<C>(ps[j]) > C(0);
        d[is[j]] = static_cast<T>(static_cast<C>(d[is[j]]) * (keep ? C(1) : C(0)));
      }
    }
  });
}

template <class T>
void max_pool_gather_kernel(TensorSpan in, std::span<Tensor> out, const NoAttrs&) {
  Tensor x = in[0].contiguous(), idx = in[1].contiguous();
  const Planes p = planes(x, out[0]);
  const T* xp = static_cast<const T*>(x.data_ptr());
  const int64_t* ip = static_cast<const int64_t*>(idx.data_ptr());
  T* y = static_cast<T*>(out[0].data_ptr());
  const int64_t in_plane = p.in_h * p.in_w, out_plane = p.out_h * p.out_w;
  for_planes(p.count, out_plane, [&](int64_t pl) {
    for (int64_t j = 0; j < out_plane; ++j)
      y[pl * out_plane + j] = xp[pl * in_plane + checked(ip[pl * out_plane + j], in_plane)];
  });
}

// ---- average pooling -------------------------------------------------------------------------

// The window of output (oy, ox) clipped to the input, and its divisor (PyTorch's rules).
struct AvgWindow {
  int64_t y0, y1, x0, x1, divisor;
};

AvgWindow avg_window(const AvgPool2dAttrs& a, const Planes& p, int64_t oy, int64_t ox) {
  int64_t y0 = oy * a.stride[0] - a.padding[0], x0 = ox * a.stride[1] - a.padding[1];
  int64_t y1 = std::min(y0 + a.kernel[0], p.in_h + a.padding[0]);
  int64_t x1 = std::min(x0 + a.kernel[1], p.in_w + a.padding[1]);
  const int64_t padded_size = (y1 - y0) * (x1 - x0);
  y0 = std::max<int64_t>(y0, 0);
  x0 = std::max<int64_t>(x0, 0);
  y1 = std::min(y1, p.in_h);
  x1 = std::min(x1, p.in_w);
  int64_t divisor = a.divisor_override != 0 ? a.divisor_override
                    : a.count_include_pad   ? padded_size
                                            : (y1 - y0) * (x1 - x0);
  return {y0, y1, x0, x1, divisor};
}

template <class T>
void avg_pool_kernel(TensorSpan in, std::span<Tensor> out, const AvgPool2dAttrs& a) {
  using C = compute_t<T>;
  Tensor x = in[0].contiguous();
  const Planes p = planes(x, out[0]);
  const T* xp = static_cast<const T*>(x.data_ptr());
  T* yp = static_cast<T*>(out[0].data_ptr());
  for_planes(p.count, p.in_h * p.in_w, [&](int64_t pl) {
    const T* xs = xp + pl * p.in_h * p.in_w;
    for (int64_t oy = 0; oy < p.out_h; ++oy)
      for (int64_t ox = 0; ox < p.out_w; ++ox) {
        const AvgWindow w = avg_window(a, p, oy, ox);
        C sum = 0;
        for (int64_t iy = w.y0; iy < w.y1; ++iy)
          for (int64_t ix = w.x0; ix < w.x1; ++ix) sum += static_cast<C>(xs[iy * p.in_w + ix]);
        const bool empty = w.y0 >= w.y1 || w.x0 >= w.x1;
        yp[(pl * p.out_h + oy) * p.out_w + ox] =
            static_cast<T>(empty ? C(0) : sum / static_cast<C>(w.divisor));
      }
  });
}

template <class T>
void avg_pool_backward_kernel(TensorSpan in, std::span<Tensor> out, const AvgPoolGradAttrs& a) {
  using C = compute_t<T>;
  Tensor g = in[0].contiguous();
  const Planes p = planes(out[0], g);
  const T* gp = static_cast<const T*>(g.data_ptr());
  T* dx = static_cast<T*>(out[0].data_ptr());
  const int64_t in_plane = p.in_h * p.in_w;
  for_planes(p.count, in_plane, [&](int64_t pl) {
    std::vector<C> acc(static_cast<std::size_t>(in_plane), C(0));
    for (int64_t oy = 0; oy < p.out_h; ++oy)
      for (int64_t ox = 0; ox < p.out_w; ++ox) {
        const AvgWindow w = avg_window(a.pool, p, oy, ox);
        if (w.y0 >= w.y1 || w.x0 >= w.x1) continue;
        const C v =
            static_cast<C>(gp[(pl * p.out_h + oy) * p.out_w + ox]) / static_cast<C>(w.divisor);
        for (int64_t iy = w.y0; iy < w.y1; ++iy)
          for (int64_t ix = w.x0; ix < w.x1; ++ix)
            acc[static_cast<std::size_t>(iy * p.in_w + ix)] += v;
      }
    for (int64_t i = 0; i < in_plane; ++i)
      dx[pl * in_plane + i] = static_cast<T>(acc[static_cast<std::size_t>(i)]);
  });
}

// ---- adaptive average pooling ----------------------------------------------------------------

inline int64_t adaptive_start(int64_t i, int64_t out, int64_t in) { return (i * in) / out; }
inline int64_t adaptive_end(int64_t i, int64_t out, int64_t in) {
  return ((i + 1) * in + out - 1) / out;
}

template <class T>
void adaptive_kernel(TensorSpan in, std::span<Tensor> out, const AdaptivePoolAttrs&) {
  using C = compute_t<T>;
  Tensor x = in[0].contiguous();
  const Planes p = planes(x, out[0]);
  const T* xp = static_cast<const T*>(x.data_ptr());
  T* yp = static_cast<T*>(out[0].data_ptr());
  for_planes(p.count, p.in_h * p.in_w, [&](int64_t pl) {
    const T* xs = xp + pl * p.in_h * p.in_w;
    for (int64_t oy = 0; oy < p.out_h; ++oy) {
      const int64_t y0 = adaptive_start(oy, p.out_h, p.in_h),
                    y1 = adaptive_end(oy, p.out_h, p.in_h);
      for (int64_t ox = 0; ox < p.out_w; ++ox) {
        const int64_t x0 = adaptive_start(ox, p.out_w, p.in_w),
                      x1 = adaptive_end(ox, p.out_w, p.in_w);
        C sum = 0;
        for (int64_t iy = y0; iy < y1; ++iy)
          for (int64_t ix = x0; ix < x1; ++ix) sum += static_cast<C>(xs[iy * p.in_w + ix]);
        yp[(pl * p.out_h + oy) * p.out_w + ox] =
            static_cast<T>(sum / static_cast<C>((y1 - y0) * (x1 - x0)));
      }
    }
  });
}

template <class T>
void adaptive_backward_kernel(TensorSpan in, std::span<Tensor> out, const PoolGradAttrs&) {
  using C = compute_t<T>;
  Tensor g = in[0].contiguous();
  const Planes p = planes(out[0], g);
  const T* gp = static_cast<const T*>(g.data_ptr());
  T* dx = static_cast<T*>(out[0].data_ptr());
  const int64_t in_plane = p.in_h * p.in_w;
  for_planes(p.count, in_plane, [&](int64_t pl) {
    std::vector<C> acc(static_cast<std::size_t>(in_plane), C(0));
    for (int64_t oy = 0; oy < p.out_h; ++oy) {
      const int64_t y0 = adaptive_start(oy, p.out_h, p.in_h),
                    y1 = adaptive_end(oy, p.out_h, p.in_h);
      for (int64_t ox = 0; ox < p.out_w; ++ox) {
        const int64_t x0 = adaptive_start(ox, p.out_w, p.in_w),
                      x1 = adaptive_end(ox, p.out_w, p.in_w);
        const C v = static_cast<C>(gp[(pl * p.out_h + oy) * p.out_w + ox]) /
                    static_cast<C>((y1 - y0) * (x1 - x0));
        for (int64_t iy = y0; iy < y1; ++iy)
          for (int64_t ix = x0; ix < x1; ++ix) acc[static_cast<std::size_t>(iy * p.in_w + ix)] += v;
      }
    }
    for (int64_t i = 0; i < in_plane; ++i)
      dx[pl * in_plane + i] = static_cast<T>(acc[static_cast<std::size_t>(i)]);
  });
}

const bool registered = [] {
  register_cpu_floating(op_max_pool2d(), []<class T>() { return &max_pool_kernel<T>; });
  register_cpu_floating(op_max_pool2d_backward(),
                        []<class T>() { return &max_pool_backward_kernel<T>; });
  register_cpu_floating(op_max_pool2d_backward_masked(),
                        []<class T>() { return &max_pool_backward_masked_kernel<T>; });
  register_cpu_floating(op_max_pool2d_gather(),
                        []<class T>() { return &max_pool_gather_kernel<T>; });
  register_cpu_floating(op_avg_pool2d(), []<class T>() { return &avg_pool_kernel<T>; });
  register_cpu_floating(op_avg_pool2d_backward(),
                        []<class T>() { return &avg_pool_backward_kernel<T>; });
  register_cpu_floating(op_adaptive_avg_pool2d(), []<class T>() { return &adaptive_kernel<T>; });
  register_cpu_floating(op_adaptive_avg_pool2d_backward(),
                        []<class T>() { return &adaptive_backward_kernel<T>; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels
