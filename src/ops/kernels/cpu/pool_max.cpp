// CPU kernels for max pooling: max_pool2d (values and int64 indices), its backward scatter
// (max_pool2d_backward, what eager mode runs), the scatter with ReLU's mask folded in
// (max_pool2d_backward_masked, see graph/passes/fuse_pool_mask.cpp) and the gather
// (max_pool2d_gather, the scatter's adjoint). One thread owns each (n, c) plane
// (pool_planes.h). Values compare in float (double for double); the rules: scan order row by
// row, the first maximum wins, a NaN wins (the last NaN of the window), an all -inf window picks
// its first element.
//
// Fast paths, bit-identical to the general loops (tests/ops/test_max_pool_fast.cpp,
// test_max_pool_2x2.cpp):
// - forward, 2x2 window with stride 2 (nearly every CNN's pool): branch-free selects over the
//   output columns; float32 in explicit vectors, one copy per ISA (pool_max_f32_impl.h);
// - forward, any other window: the outputs whose windows lie inside the input's columns are
//   compared across a block of output columns at once (float32 with stride 1 or 2 in explicit
//   vectors, the rest auto-vectorized), the border ones by the general loop;
// - backward, plain or masked, where every index lies in its output's 2x2 window (what a 2x2 /
//   stride-2 forward produced): each input row pair is written once, zeros and winners together,
//   instead of a zero-filled plane that the winners are then scattered into (and, masked,
//   multiplied in a second pass). The op takes any indices, so the kernel checks each one
//   against its window; a plane with any other index is redone by the general scatter.
//
// Memory contract: inputs are read (made contiguous first); every output element is written.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "athanor/core/loop_hints.h"
#include "athanor/ops/conv.h"
#include "common/isa_dispatch.h"
#include "common/register.h"
#include "pool_planes.h"

namespace ath::kernels {

namespace {

// ---- forward ---------------------------------------------------------------------------------

// The 2x2 window with stride 2 and no padding or dilation, with the general loop's exact
// comparisons: scan order (0,0) (0,1) (1,0) (1,1), the first maximum wins, a NaN wins (the last
// one, as in the general loop).
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

// bfloat16 and float16, the mixed-precision cases (with their branch-free widening the selects
// vectorize too).
template <class T>
ATH_ISA_BODY void max_pool_2x2_half_body(const T* xp, T* yp, int64_t* ip, int64_t begin,
                                         int64_t end, const Planes& p) {
  const int64_t in_plane = p.in_h * p.in_w, out_plane = p.out_h * p.out_w;
  for (int64_t pl = begin; pl < end; ++pl)
    max_pool_2x2_plane<T, float>(xp + pl * in_plane, yp + pl * out_plane, ip + pl * out_plane,
                                 p.in_w, p.out_h, p.out_w);
}
ATH_ISA_BODY void max_pool_2x2_bf16_body(const BFloat16* xp, BFloat16* yp, int64_t* ip,
                                         int64_t begin, int64_t end, const Planes& p) {
  max_pool_2x2_half_body(xp, yp, ip, begin, end, p);
}
ATH_ISA_DISPATCH(max_pool_2x2_bf16,
                 (const BFloat16* xp, BFloat16* yp, int64_t* ip, int64_t begin, int64_t end,
                  const Planes& p),
                 (xp, yp, ip, begin, end, p))
ATH_ISA_BODY void max_pool_2x2_f16_body(const Half* xp, Half* yp, int64_t* ip, int64_t begin,
                                        int64_t end, const Planes& p) {
  max_pool_2x2_half_body(xp, yp, ip, begin, end, p);
}
ATH_ISA_DISPATCH(max_pool_2x2_f16,
                 (const Half* xp, Half* yp, int64_t* ip, int64_t begin, int64_t end,
                  const Planes& p),
                 (xp, yp, ip, begin, end, p))

// Any window: for each output, the window clipped to the input, scanned row by row. Outputs
// [ox_begin, ox_end) of row oy.
template <class T, class C>
ATH_ISA_BODY void max_pool_general_outputs(const T* xs, T* yr, int64_t* ir, const Planes& p,
                                           const MaxPool2dAttrs& a, int64_t oy, int64_t ox_begin,
                                           int64_t ox_end) {
  // Locals, not reads through `a` and `p` inside the loop: the int64 index stores could alias
  // them, which made the compiler reload every bound per output element.
  const int64_t in_h = p.in_h, in_w = p.in_w;
  const int64_t kh = a.kernel[0], kw = a.kernel[1], sh = a.stride[0], sw = a.stride[1];
  const int64_t ph = a.padding[0], pw = a.padding[1], dh = a.dilation[0], dw = a.dilation[1];
  int64_t y0 = oy * sh - ph;
  const int64_t y1 = std::min(y0 + (kh - 1) * dh + 1, in_h);
  while (y0 < 0) y0 += dh;
  for (int64_t ox = ox_begin; ox < ox_end; ++ox) {
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
    yr[ox] = static_cast<T>(best);
    ir[ox] = best_i;
  }
}

// Outputs [ox_begin, ox_end) of row oy whose windows lie inside the input's columns, a block at
// a time: each window element in scan order is compared across the block's outputs at once,
// branch-free, so the compiler vectorizes over output columns (kStride 1 or 2: contiguous or
// de-interleaved reads; 0: the stride from `a`). Per output these are the loop above's
// comparisons in its order, so the bits are the same. The winner is kept as its row and column
// offset (32-bit, as wide as a float lane) and turned into an index at the end.
template <class T, class C, int kStride>
ATH_ISA_BODY void max_pool_inner_outputs(const T* xs, T* yr, int64_t* ir, const Planes& p,
                                         const MaxPool2dAttrs& a, int64_t oy, int64_t ox_begin,
                                         int64_t ox_end) {
  const int64_t in_h = p.in_h, in_w = p.in_w, kh = a.kernel[0], kw = a.kernel[1];
  const int64_t sw = kStride > 0 ? kStride : a.stride[1], pw = a.padding[1];
  const int64_t dh = a.dilation[0], dw = a.dilation[1];
  int64_t y0 = oy * a.stride[0] - a.padding[0];
  const int64_t y1 = std::min(y0 + (kh - 1) * dh + 1, in_h);
  while (y0 < 0) y0 += dh;
  constexpr int64_t kBlock = 64;
  for (int64_t b = ox_begin; b < ox_end; b += kBlock) {
    const int64_t n = std::min(kBlock, ox_end - b);
    C best[kBlock];
    int32_t row[kBlock], column[kBlock];
    for (int64_t j = 0; j < n; ++j) {
      best[j] = -std::numeric_limits<C>::infinity();
      row[j] = static_cast<int32_t>(y0);
      column[j] = 0;
    }
    for (int64_t iy = y0; iy < y1; iy += dh)
      for (int64_t kx = 0; kx < kw; ++kx) {
        const T* src = xs + iy * in_w + b * sw - pw + kx * dw;
        const auto r = static_cast<int32_t>(iy), c = static_cast<int32_t>(kx * dw);
        for (int64_t j = 0; j < n; ++j) {
          const C v = static_cast<C>(src[j * sw]);
          const bool take = (v > best[j]) | (v != v);
          best[j] = take ? v : best[j];
          row[j] = take ? r : row[j];
          column[j] = take ? c : column[j];
        }
      }
    for (int64_t j = 0; j < n; ++j) {
      yr[b + j] = static_cast<T>(best[j]);
      ir[b + j] = row[j] * in_w + (b + j) * sw - pw + column[j];
    }
  }
}

// The output columns whose windows lie inside the input's columns: ox * sw >= pw and
// ox * sw - pw + reach < in_w (none unless rows and window reach fit the 32-bit lanes that
// keep a winner's row and column).
struct InnerColumns {
  int64_t begin, end;
};
inline InnerColumns inner_columns(const Planes& p, const MaxPool2dAttrs& a) {
  const int64_t sw = a.stride[1], pw = a.padding[1], reach = (a.kernel[1] - 1) * a.dilation[1];
  const int64_t begin = std::min((pw + sw - 1) / sw, p.out_w);
  const bool fits =
      p.in_h <= std::numeric_limits<int32_t>::max() && reach <= std::numeric_limits<int32_t>::max();
  if (!fits || p.in_w - 1 - reach + pw < 0) return {begin, begin};
  return {begin, std::clamp((p.in_w - 1 - reach + pw) / sw + 1, begin, p.out_w)};
}

// Planes [begin, end) for any window; float32 has its own copies (pool_max_f32_impl.h).
template <class T, class C>
void max_pool_general_planes(const T* xp, T* yp, int64_t* ip, int64_t begin, int64_t end,
                             const Planes& p, const MaxPool2dAttrs& a) {
  const int64_t in_plane = p.in_h * p.in_w, out_plane = p.out_h * p.out_w;
  const InnerColumns inner = inner_columns(p, a);
  for (int64_t pl = begin; pl < end; ++pl) {
    const T* xs = xp + pl * in_plane;
    for (int64_t oy = 0; oy < p.out_h; ++oy) {
      T* yr = yp + pl * out_plane + oy * p.out_w;
      int64_t* ir = ip + pl * out_plane + oy * p.out_w;
      max_pool_general_outputs<T, C>(xs, yr, ir, p, a, oy, 0, inner.begin);
      if (a.stride[1] == 1) {
        max_pool_inner_outputs<T, C, 1>(xs, yr, ir, p, a, oy, inner.begin, inner.end);
      } else if (a.stride[1] == 2) {
        max_pool_inner_outputs<T, C, 2>(xs, yr, ir, p, a, oy, inner.begin, inner.end);
      } else {
        max_pool_inner_outputs<T, C, 0>(xs, yr, ir, p, a, oy, inner.begin, inner.end);
      }
      max_pool_general_outputs<T, C>(xs, yr, ir, p, a, oy, inner.end, p.out_w);
    }
  }
}

// ---- backward: the scatter, plain or masked --------------------------------------------------

// Checks an index before it is used to address a plane.
inline int64_t checked(int64_t i, int64_t plane) {
  ATH_CHECK(i >= 0 && i < plane, IndexError, "index {} is out of range for a plane of {} elements",
            i, plane);
  return i;
}

// One plane of the scatter, for any indices: zero the plane, add each gradient at its index
// (in compute precision, rounded once per element), then, masked, multiply each winner by
// (pooled > 0): 1 or 0 exactly, after the sums, so the bits equal the unfused scatter followed
// by the mask-multiply. A winner of several windows is multiplied once per window by the same
// factor (x*1*1 = x, x*0*0 = x*0).
template <class T, bool kMasked>
void max_unpool_general_plane(const T* gs, const int64_t* is, const T* ps, T* d, int64_t in_plane,
                              int64_t out_plane) {
  using C = compute_t<T>;
  if constexpr (std::is_same_v<T, C>) {
    // float, double: accumulate in the output plane itself (no scratch to allocate).
    std::fill(d, d + in_plane, T(0));
    for (int64_t j = 0; j < out_plane; ++j) d[checked(is[j], in_plane)] += gs[j];
    if constexpr (kMasked)
      for (int64_t j = 0; j < out_plane; ++j) d[is[j]] *= ps[j] > T(0) ? T(1) : T(0);
  } else {
    thread_local std::vector<C> acc;
    acc.assign(static_cast<std::size_t>(in_plane), C(0));
    for (int64_t j = 0; j < out_plane; ++j)
      acc[static_cast<std::size_t>(checked(is[j], in_plane))] += static_cast<C>(gs[j]);
    for (int64_t i = 0; i < in_plane; ++i) d[i] = static_cast<T>(acc[static_cast<std::size_t>(i)]);
    if constexpr (kMasked)
      for (int64_t j = 0; j < out_plane; ++j) {
        const bool keep = static_cast<C>(ps[j]) > C(0);
        d[is[j]] = static_cast<T>(static_cast<C>(d[is[j]]) * (keep ? C(1) : C(0)));
      }
  }
}

// A winner's value as the general scatter leaves it: 0 + g in compute precision (so -0 becomes
// +0 and a signalling NaN quiet, as there), rounded once, then, masked, times 1 or 0.
template <class T, bool kMasked>
inline T unpooled(T g, [[maybe_unused]] T pooled) {
  using C = compute_t<T>;
  T v = static_cast<T>(C(0) + static_cast<C>(g));
  if constexpr (kMasked)
    v = static_cast<T>(static_cast<C>(v) * (static_cast<C>(pooled) > C(0) ? C(1) : C(0)));
  return v;
}

// Zeroes what no 2x2 window covers: the columns right of 2 * out_w in rows r0, r1 (an odd input
// width), and the rows below 2 * out_h.
template <class T>
inline void zero_uncovered_columns(T* r0, T* r1, int64_t in_w, int64_t out_w) {
  std::fill(r0 + 2 * out_w, r0 + in_w, static_cast<T>(0.0f));
  std::fill(r1 + 2 * out_w, r1 + in_w, static_cast<T>(0.0f));
}
template <class T>
inline void zero_uncovered_rows(T* d, const Planes& p) {
  std::fill(d + 2 * p.out_h * p.in_w, d + p.in_h * p.in_w, static_cast<T>(0.0f));
}
template <class T>
inline void zero_uncovered(T* d, const Planes& p) {
  if (p.in_w > 2 * p.out_w)
    for (int64_t oy = 0; oy < p.out_h; ++oy)
      zero_uncovered_columns(d + 2 * oy * p.in_w, d + (2 * oy + 1) * p.in_w, p.in_w, p.out_w);
  zero_uncovered_rows(d, p);
}

// One plane of the 2x2 scatter, any dtype; false when an index lies outside its window (the
// plane is then incomplete: the caller redoes it with the general scatter).
template <class T, bool kMasked>
__attribute__((always_inline)) inline bool max_unpool_2x2_plane(const T* gs, const int64_t* is,
                                                                const T* ps, T* d,
                                                                const Planes& p) {
  const int64_t in_w = p.in_w, out_h = p.out_h, out_w = p.out_w;
  const T zero = static_cast<T>(0.0f);
  bool in_window = true;
  for (int64_t oy = 0; oy < out_h; ++oy) {
    T* r0 = d + 2 * oy * in_w;
    T* r1 = r0 + in_w;
    for (int64_t ox = 0; ox < out_w; ++ox) {
      const int64_t j = oy * out_w + ox;
      const int64_t k = is[j] - (2 * oy * in_w + 2 * ox);
      const T v = unpooled<T, kMasked>(gs[j], kMasked ? ps[j] : zero);
      r0[2 * ox] = k == 0 ? v : zero;
      r0[2 * ox + 1] = k == 1 ? v : zero;
      r1[2 * ox] = k == in_w ? v : zero;
      r1[2 * ox + 1] = k == in_w + 1 ? v : zero;
      in_window &= (k == 0) | (k == 1) | (k == in_w) | (k == in_w + 1);
    }
    zero_uncovered_columns(r0, r1, in_w, out_w);
  }
  zero_uncovered_rows(d, p);
  return in_window;
}

// ---- float32: one copy per ISA ------------------------------------------------------------------

// Rows wider than this take the scalar loops: in-window offsets must fit 32-bit vector lanes.
constexpr int64_t kMaxWidth = int64_t{1} << 29;

namespace base {
// The widest chunk: 4 lanes, one SSE2 register. With 8 (a pair), the 2x2 pool at W2's
// [64, 64, 14, 14] took 947 us against 268.
constexpr int kWide = 4;
#include "pool_max_f32_impl.h"
}  // namespace base
#if ATH_ISA_MULTI
ATH_ISA_BEGIN_AVX2
namespace avx2 {
constexpr int kWide = 8;  // one 256-bit register
#include "pool_max_f32_impl.h"
}  // namespace avx2
ATH_ISA_END
ATH_ISA_BEGIN_AVX512
namespace avx512 {
constexpr int kWide = 16;  // one 512-bit register
#include "pool_max_f32_impl.h"
}  // namespace avx512
ATH_ISA_END
#endif

// The current ISA's copy of `fn` (one choice per range of planes).
#if ATH_ISA_MULTI
#define ATH_POOL_ISA_COPY(fn) pick_isa_copy(&base::fn, &avx2::fn, &avx512::fn)
#else
#define ATH_POOL_ISA_COPY(fn) (&base::fn)
#endif

template <class T>
void max_pool_kernel(TensorSpan in, std::span<Tensor> out, const MaxPool2dAttrs& a) {
  using C = compute_t<T>;
  Tensor x = in[0].contiguous();
  const Planes p = planes(x, out[0]);
  const T* xp = static_cast<const T*>(x.data_ptr());
  T* yp = static_cast<T*>(out[0].data_ptr());
  int64_t* ip = static_cast<int64_t*>(out[1].data_ptr());
  const bool two_by_two =
      a.kernel == std::array<int64_t, 2>{2, 2} && a.stride == std::array<int64_t, 2>{2, 2} &&
      a.padding == std::array<int64_t, 2>{0, 0} && a.dilation == std::array<int64_t, 2>{1, 1} &&
      2 * p.out_h <= p.in_h && 2 * p.out_w <= p.in_w;
  const bool vectors = p.out_w >= 2 && p.in_w <= kMaxWidth;  // the float32 copies' domain
  const int64_t in_plane = p.in_h * p.in_w, out_plane = p.out_h * p.out_w;
  for_plane_ranges(p.count, in_plane, [&](int64_t begin, int64_t end) {
    if (two_by_two) {
      if constexpr (std::is_same_v<T, float>) {
        if (vectors) return ATH_POOL_ISA_COPY(pool_planes)(xp, yp, ip, begin, end, p);
      }
      if constexpr (std::is_same_v<T, BFloat16>) {
        return max_pool_2x2_bf16(xp, yp, ip, begin, end, p);
      }
      if constexpr (std::is_same_v<T, Half>) return max_pool_2x2_f16(xp, yp, ip, begin, end, p);
      for (int64_t pl = begin; pl < end; ++pl)
        max_pool_2x2_plane<T, C>(xp + pl * in_plane, yp + pl * out_plane, ip + pl * out_plane,
                                 p.in_w, p.out_h, p.out_w);
      return;
    }
    if constexpr (std::is_same_v<T, float>) {
      ATH_POOL_ISA_COPY(window_planes)(xp, yp, ip, begin, end, p, a);
    } else {
      max_pool_general_planes<T, C>(xp, yp, ip, begin, end, p, a);
    }
  });
}

// max_pool2d_backward (in: grad, indices) and max_pool2d_backward_masked (in: grad, indices,
// pooled values).
// Planes [begin, end) of the backward scatter: gp, ip, pp (null unless kMasked) and dx point at
// plane 0 of their tensors.
template <class T, bool kMasked>
void unpool_plane_range(const T* gp, const int64_t* ip, const T* pp, T* dx, int64_t begin,
                        int64_t end, const Planes& p) {
  const int64_t in_plane = p.in_h * p.in_w, out_plane = p.out_h * p.out_w;
  // Windows of 2x2 at stride 2 fit the plane: any in-window indices fall into disjoint
  // windows, so no input element collects two gradients.
  const bool two_by_two = 2 * p.out_h <= p.in_h && 2 * p.out_w <= p.in_w;
  const bool vectors = p.out_w >= 2 && p.in_w <= kMaxWidth;
  if constexpr (std::is_same_v<T, float>) {
    if (two_by_two && vectors)
      return ATH_POOL_ISA_COPY(unpool_planes<kMasked>)(gp, ip, pp, dx, begin, end, p);
  }
  for (int64_t pl = begin; pl < end; ++pl) {
    const T* gs = gp + pl * out_plane;
    const int64_t* is = ip + pl * out_plane;
    const T* ps = kMasked ? pp + pl * out_plane : nullptr;
    T* d = dx + pl * in_plane;
    if (!two_by_two || !max_unpool_2x2_plane<T, kMasked>(gs, is, ps, d, p))
      max_unpool_general_plane<T, kMasked>(gs, is, ps, d, in_plane, out_plane);
  }
}

template <class T, bool kMasked>
void max_pool_backward_kernel(TensorSpan in, std::span<Tensor> out, const PoolGradAttrs&) {
  Tensor g = in[0].contiguous(), idx = in[1].contiguous();
  Tensor pooled = kMasked ? in[2].contiguous() : Tensor();
  const Planes p = planes(out[0], g);
  const T* gp = static_cast<const T*>(g.data_ptr());
  const int64_t* ip = static_cast<const int64_t*>(idx.data_ptr());
  const T* pp = kMasked ? static_cast<const T*>(pooled.data_ptr()) : nullptr;
  T* dx = static_cast<T*>(out[0].data_ptr());
  for_plane_ranges(p.count, p.in_h * p.in_w + p.out_h * p.out_w, [&](int64_t begin, int64_t end) {
    unpool_plane_range<T, kMasked>(gp, ip, pp, dx, begin, end, p);
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

const bool registered = [] {
  register_cpu_floating(op_max_pool2d(), []<class T>() { return &max_pool_kernel<T>; });
  register_cpu_floating(op_max_pool2d_backward(),
                        []<class T>() { return &max_pool_backward_kernel<T, false>; });
  register_cpu_floating(op_max_pool2d_backward_masked(),
                        []<class T>() { return &max_pool_backward_kernel<T, true>; });
  register_cpu_floating(op_max_pool2d_gather(),
                        []<class T>() { return &max_pool_gather_kernel<T>; });
  return true;
}();

}  // namespace

void max_unpool_masked_planes_f32(const float* gp, const int64_t* ip, const float* pp, float* dx,
                                  int64_t begin, int64_t end, const Planes& p) {
  unpool_plane_range<float, true>(gp, ip, pp, dx, begin, end, p);
}

}  // namespace ath::kernels
