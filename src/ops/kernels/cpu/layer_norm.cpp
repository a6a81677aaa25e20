// CPU kernels for layer_norm and layer_norm_backward. x is viewed as [M, N] rows (N = the
// normalized elements); statistics accumulate in double, elementwise math runs in float
// (double for float64). The float32 rows, forward and backward, run in loops compiled per ISA on
// 16-lane vectors of the copy's width (isa_dispatch.h, lanes.h; this file builds without FMA
// contraction, and the sums keep lane_sum's order, so every copy gives the generic loops' bits).
//
// Memory contract. Forward: reads each row twice (moments, in cache-sized chunks; then the
// normalization, usually still in cache), writes y once and mean/rstd per row. Backward: reads
// g and x per row twice (two row sums, then dx), writes dx once (layer_norm_backward_add also
// reads the addend row and adds it to the dx row while it is in cache); dweight/dbias accumulate
// into per-row-block partials (blocks fixed by M alone; float32 sums a block's rows per column
// strip in registers, re-reading its g and x from cache) that are then summed in block order, so
// no result depends on the thread count. The partials are up to 2 * 64 * N doubles from the
// caching allocator.
#include <vector>

#include "athanor/core/parallel.h"
#include "athanor/ops/nn_functional.h"
#include "common/isa_dispatch.h"
#include "common/lanes.h"
#include "common/nn_common.h"
#include "common/register.h"

namespace ath::kernels {
namespace {

// The moments of `rows` <= kInterleave rows of n <= kMomentChunk elements (one chunk of
// run_moments, computed inline with its exact arithmetic: its merge with the empty set returns
// the chunk's moments) in lane_sum's order, so every copy gives the bits the generic loop below
// gives. The rows go through each pass together: one row's sums are a chain of dependent adds
// and two horizontal sums, which left the cores waiting one row at a time.
constexpr int kInterleave = 4;
template <int W>
ATH_ISA_BODY void row_moments_f32(const float* const* xr, int rows, int64_t n, double* mean,
                                  double* m2) {
  D16<W> acc[kInterleave];
  for (int r = 0; r < rows; ++r) acc[r] = zero_d16<W>();
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int r = 0; r < rows; ++r) acc[r] = acc[r] + to_f64(vload<W>(xr[r] + j));
  for (int r = 0; r < rows; ++r) {
    for (int64_t k = j, l = 0; k < n; ++k, ++l)
      add_lane(acc[r], static_cast<int>(l), double(xr[r][k]));
    mean[r] = hsum(acc[r]) / double(n);
    acc[r] = zero_d16<W>();
  }
  for (j = 0; j + kLanes <= n; j += kLanes)
    for (int r = 0; r < rows; ++r) {
      const D16<W> d = to_f64(vload<W>(xr[r] + j)) - mean[r];
      acc[r] = acc[r] + d * d;
    }
  for (int r = 0; r < rows; ++r) {
    for (int64_t k = j, l = 0; k < n; ++k, ++l) {
      const double d = double(xr[r][k]) - mean[r];
      add_lane(acc[r], static_cast<int>(l), d * d);
    }
    m2[r] = hsum(acc[r]);
  }
}

// Rows [r0, r1) of the float32 forward, compiled per ISA with its vector width W (isa_dispatch.h,
// lanes.h), kInterleave rows at a time.
template <int W>
ATH_ISA_BODY void layer_norm_rows_f32_body(const float* xp, float* yp, float* mp, float* rp,
                                           const float* wp, const float* bp, int64_t n, double eps,
                                           int64_t r0, int64_t r1) {
  for (int64_t i0 = r0; i0 < r1; i0 += kInterleave) {
    const int rows = static_cast<int>(std::min<int64_t>(kInterleave, r1 - i0));
    double mean[kInterleave], m2[kInterleave];
    if (n > 0 && n <= kMomentChunk) {
      const float* xr[kInterleave];
      for (int r = 0; r < rows; ++r) xr[r] = xp + (i0 + r) * n;
      row_moments_f32<W>(xr, rows, n, mean, m2);
    } else {
      for (int r = 0; r < rows; ++r) {
        const Moments mo = run_moments(xp + (i0 + r) * n, n);
        mean[r] = mo.mean;
        m2[r] = mo.m2;
      }
    }
    for (int r = 0; r < rows; ++r) {
      const int64_t i = i0 + r;
      const float* xr = xp + i * n;
      float* yr = yp + i * n;
      const float mu = float(mean[r]), rs = float(1.0 / std::sqrt(m2[r] / double(n) + eps));
      mp[i] = mu;
      rp[i] = rs;
      int64_t j = 0;
      for (; j + kLanes <= n; j += kLanes)
        vstore(yr + j, (vload<W>(xr + j) - mu) * rs * vload<W>(wp + j) + vload<W>(bp + j));
      for (; j < n; ++j) yr[j] = (xr[j] - mu) * rs * wp[j] + bp[j];
    }
  }
}
ATH_ISA_DISPATCH_W(layer_norm_rows_f32,
                   (const float* xp, float* yp, float* mp, float* rp, const float* wp,
                    const float* bp, int64_t n, double eps, int64_t r0, int64_t r1),
                   (xp, yp, mp, rp, wp, bp, n, eps, r0, r1))

// One row block of the float32 backward, compiled per ISA with its vector width W: the generic
// loop's arithmetic below, the row sums in lane_sum's order, so the bits are the same. dx may be
// null (not wanted), ap null (no addend), aw / ab null (no dweight / dbias); aw and ab are
// overwritten with the block's sums.
template <int W>
ATH_ISA_BODY void layer_norm_backward_block_f32_body(const float* gp, const float* xp,
                                                     const float* ap, float* dxp, double* aw,
                                                     double* ab, const float* mean,
                                                     const float* rstd, const float* wp, int64_t n,
                                                     int64_t r0, int64_t r1) {
  for (int64_t i = r0; dxp != nullptr && i < r1; ++i) {  // dx, row by row
    const float *gr = gp + i * n, *xr = xp + i * n;
    const float mu = mean[i], r = rstd[i];
    D16<W> acc_a = zero_d16<W>(), acc_b = zero_d16<W>();  // sums of g * w and g * w * xhat
    int64_t j = 0;
    for (; j + kLanes <= n; j += kLanes) {
      const F16<W> gw = vload<W>(gr + j) * vload<W>(wp + j);
      acc_a = acc_a + to_f64(gw);
      acc_b = acc_b + to_f64(gw * ((vload<W>(xr + j) - mu) * r));
    }
    for (int l = 0; j < n; ++j, ++l) {
      add_lane(acc_a, l, double(gr[j] * wp[j]));
      add_lane(acc_b, l, double(gr[j] * wp[j] * ((xr[j] - mu) * r)));
    }
    const float ca = float(hsum(acc_a) / double(n)), cb = float(hsum(acc_b) / double(n));
    float* dr = dxp + i * n;
    const float* ar = ap != nullptr ? ap + i * n : nullptr;
    for (j = 0; j + kLanes <= n; j += kLanes) {
      const F16<W> xh = (vload<W>(xr + j) - mu) * r;
      F16<W> d = r * (vload<W>(gr + j) * vload<W>(wp + j) - ca - xh * cb);
      if (ar != nullptr) d = d + vload<W>(ar + j);
      vstore(dr + j, d);
    }
    for (; j < n; ++j) {
      const float xh = (xr[j] - mu) * r;
      dr[j] = r * (gr[j] * wp[j] - ca - xh * cb);
      if (ar != nullptr) dr[j] = dr[j] + ar[j];
    }
  }
  // dweight / dbias: each 16-column strip summed over the block's rows in registers (the rows are
  // still in cache), row by row from 0 as the generic loop sums them.
  if (aw == nullptr && ab == nullptr) return;
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    D16<W> sw = zero_d16<W>(), sb = zero_d16<W>();
    for (int64_t i = r0; i < r1; ++i) {
      const F16<W> g = vload<W>(gp + i * n + j);
      if (aw != nullptr) sw = sw + to_f64(g * ((vload<W>(xp + i * n + j) - mean[i]) * rstd[i]));
      if (ab != nullptr) sb = sb + to_f64(g);
    }
    if (aw != nullptr) vstore(aw + j, sw);
    if (ab != nullptr) vstore(ab + j, sb);
  }
  for (; j < n; ++j) {
    double sw = 0, sb = 0;
    for (int64_t i = r0; i < r1; ++i) {
      const float g = gp[i * n + j];
      sw += double(g * ((xp[i * n + j] - mean[i]) * rstd[i]));
      sb += double(g);
    }
    if (aw != nullptr) aw[j] = sw;
    if (ab != nullptr) ab[j] = sb;
  }
}
ATH_ISA_DISPATCH_W(layer_norm_backward_block_f32,
                   (const float* gp, const float* xp, const float* ap, float* dxp, double* aw,
                    double* ab, const float* mean, const float* rstd, const float* wp, int64_t n,
                    int64_t r0, int64_t r1),
                   (gp, xp, ap, dxp, aw, ab, mean, rstd, wp, n, r0, r1))

template <class T>
void layer_norm_kernel(TensorSpan in, std::span<Tensor> out, const LayerNormAttrs& a) {
  using C = compute_t<T>;
  Tensor x = dense(in[0]);
  const int64_t n = numel(a.normalized_shape), m = out[1].numel();
  std::vector<C> w = param_or<C>(in[1], a.has_weight, n, C(1));
  std::vector<C> b = param_or<C>(in[2], a.has_bias, n, C(0));
  const T* xp = static_cast<const T*>(x.data_ptr());
  T* yp = static_cast<T*>(out[0].data_ptr());
  C* mp = out[1].data<C>();
  C* rp = out[2].data<C>();
  const C *wp = w.data(), *bp = b.data();
  const int64_t grain = std::max<int64_t>(1, kPointwiseGrain / std::max<int64_t>(n, 1));
  if constexpr (std::is_same_v<T, float>) {
    parallel_for(0, m, grain, [&](int64_t begin, int64_t end) {
      layer_norm_rows_f32(xp, yp, mp, rp, wp, bp, n, a.eps, begin, end);
    });
    return;
  }
  parallel_for(0, m, grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const T* xr = xp + i * n;
      T* yr = yp + i * n;
      Moments mo = run_moments(xr, n);
      const C mean = C(mo.mean), r = C(1.0 / std::sqrt(mo.m2 / double(n) + a.eps));
      mp[i] = mean;
      rp[i] = r;
      for (int64_t j = 0; j < n; ++j) yr[j] = T((C(xr[j]) - mean) * r * wp[j] + bp[j]);
    }
  });
}

// sums[j] = the sum over blocks b, in order from 0, of parts[b * stride + j], for j < len: the
// dweight / dbias partials combined column by column, a vector of columns at a time.
inline constexpr int64_t kCombineChunk = 256;
ATH_ISA_BODY void sum_blocks_f64_body(const double* parts, int64_t stride, int64_t blocks,
                                      int64_t len, double* sums) {
  for (int64_t j = 0; j < len; ++j) sums[j] = 0;
  for (int64_t b = 0; b < blocks; ++b) {
    const double* p = parts + b * stride;
    for (int64_t j = 0; j < len; ++j) sums[j] += p[j];
  }
}
ATH_ISA_DISPATCH(sum_blocks_f64,
                 (const double* parts, int64_t stride, int64_t blocks, int64_t len, double* sums),
                 (parts, stride, blocks, len, sums))

// AddResidual: layer_norm_backward_add, whose 6th input is added to each dx element after
// it is rounded to T (what a separate add would read).
template <class T, bool AddResidual>
void layer_norm_backward_kernel(TensorSpan in, std::span<Tensor> out,
                                const LayerNormBackwardAttrs& a) {
  using C = compute_t<T>;
  Tensor g = dense(in[0]), x = dense(in[1]);
  Tensor addend = AddResidual ? dense(in[5]) : Tensor();
  const T* ap = AddResidual ? static_cast<const T*>(addend.data_ptr()) : nullptr;
  const int64_t n = numel(a.normalized_shape), m = in[2].numel();
  Values<C> mean(in[2]), rstd(in[3]);
  std::vector<C> w = param_or<C>(in[4], a.has_weight, n, C(1));
  const bool need_dx = a.mask[0] && !skipped(out[0]);
  const bool need_dw = a.mask[1] && !skipped(out[1]), need_db = a.mask[2] && !skipped(out[2]);
  const T *gp = static_cast<const T*>(g.data_ptr()), *xp = static_cast<const T*>(x.data_ptr());
  T* dxp = need_dx ? static_cast<T*>(out[0].data_ptr()) : nullptr;
  const C* wp = w.data();

  // Row blocks depend on M only; each block owns one partial row for dw and one for db, which
  // it overwrites (so the scratch needs no clearing).
  const int64_t rows_per_block = std::max<int64_t>(1, (m + 63) / 64);
  const int64_t blocks = m == 0 ? 0 : (m + rows_per_block - 1) / rows_per_block;
  // Scratch from the caching allocator (as conv_dnnl.cpp's partials), so memory_stats counts it.
  Tensor partials = empty({int64_t(need_dw) + int64_t(need_db), blocks, n}, kFloat64);
  double* pw = need_dw ? partials.data<double>() : nullptr;
  double* pb = need_db ? partials.data<double>() + (need_dw ? blocks * n : 0) : nullptr;
  const int64_t grain =
      std::max<int64_t>(1, kPointwiseGrain / std::max<int64_t>(n * rows_per_block, 1));
  parallel_for(0, blocks, grain, [&](int64_t bb, int64_t be) {
    for (int64_t blk = bb; blk < be; ++blk) {
      double* aw = need_dw ? pw + blk * n : nullptr;
      double* ab = need_db ? pb + blk * n : nullptr;
      const int64_t r0 = blk * rows_per_block, r1 = std::min(m, (blk + 1) * rows_per_block);
      if constexpr (std::is_same_v<T, float>) {
        layer_norm_backward_block_f32(gp, xp, ap, dxp, aw, ab, mean.data(), rstd.data(), wp, n, r0,
                                      r1);
        continue;
      }
      if (aw != nullptr) std::fill(aw, aw + n, 0.0);
      if (ab != nullptr) std::fill(ab, ab + n, 0.0);
      for (int64_t i = r0; i < r1; ++i) {
        const T *gr = gp + i * n, *xr = xp + i * n;
        const C mu = mean[i], r = rstd[i];
        if (need_dx) {
          double sa = lane_sum<double>(n, [&](int64_t j) { return double(C(gr[j]) * wp[j]); });
          double sb = lane_sum<double>(
              n, [&](int64_t j) { return double(C(gr[j]) * wp[j] * ((C(xr[j]) - mu) * r)); });
          const C ca = C(sa / double(n)), cb = C(sb / double(n));
          T* dr = dxp + i * n;
          for (int64_t j = 0; j < n; ++j) {
            C xh = (C(xr[j]) - mu) * r;
            dr[j] = T(r * (C(gr[j]) * wp[j] - ca - xh * cb));
          }
          if constexpr (AddResidual) {
            const T* ar = ap + i * n;
            for (int64_t j = 0; j < n; ++j) dr[j] = T(C(dr[j]) + C(ar[j]));
          }
        }
        if (aw != nullptr) {
          for (int64_t j = 0; j < n; ++j) aw[j] += double(C(gr[j]) * ((C(xr[j]) - mu) * r));
        }
        if (ab != nullptr) {
          for (int64_t j = 0; j < n; ++j) ab[j] += double(C(gr[j]));
        }
      }
    }
  });
  auto combine = [&](const double* parts, Tensor& dst) {
    T* d = static_cast<T*>(dst.data_ptr());
    parallel_for(0, n, kPointwiseGrain / std::max<int64_t>(blocks, 1) + 1,
                 [&](int64_t jb, int64_t je) {
                   double sums[kCombineChunk];
                   for (int64_t c = jb; c < je; c += kCombineChunk) {
                     const int64_t len = std::min(kCombineChunk, je - c);
                     sum_blocks_f64(parts + c, n, blocks, len, sums);
                     for (int64_t j = 0; j < len; ++j) d[c + j] = T(C(sums[j]));
                   }
                 });
  };
  if (need_dw) combine(pw, out[1]);
  if (need_db) combine(pb, out[2]);
}

const bool registered = [] {
  register_cpu_floating(op_layer_norm(), []<class T>() { return &layer_norm_kernel<T>; });
  register_cpu_floating(op_layer_norm_backward(),
                        []<class T>() { return &layer_norm_backward_kernel<T, false>; });
  register_cpu_floating(op_layer_norm_backward_add(),
                        []<class T>() { return &layer_norm_backward_kernel<T, true>; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels
