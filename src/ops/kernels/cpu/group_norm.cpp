// CPU kernels for group_norm and group_norm_backward. x is viewed as [N, C, S]; a group is the
// contiguous run of C / G channels of one sample. Statistics accumulate in double, elementwise
// math runs in float (double for float64).
//
// Memory contract. Forward: one task per (sample, group) segment reads it twice (moments in
// cache-sized chunks, then y = x * scale + shift per channel) and writes y once and its
// mean/rstd. Backward: one task per segment reads g and x twice (per-channel sums, then dx);
// per-(sample, channel) sums go to a scratch buffer from which dweight/dbias are summed over
// samples in order. Nothing depends on the thread count.
#include <vector>

#include "athanor/core/parallel.h"
#include "athanor/ops/nn_functional.h"
#include "common/nn_common.h"
#include "common/register.h"

namespace ath::kernels {
namespace {

struct GroupLayout {
  int64_t n, c, s, groups, cg;
};

GroupLayout layout_of(const Tensor& x, int64_t groups) {
  int64_t s = 1;
  for (int64_t d = 2; d < x.dim(); ++d) s *= x.shape()[d];
  return {x.shape()[0], x.shape()[1], s, groups, x.shape()[1] / groups};
}

template <class T>
void group_norm_kernel(TensorSpan in, std::span<Tensor> out, const GroupNormAttrs& a) {
  using C = compute_t<T>;
  Tensor x = dense(in[0]);
  const GroupLayout l = layout_of(x, a.num_groups);
  const int64_t seg = l.cg * l.s;
  std::vector<C> w = param_or<C>(in[1], a.has_weight, l.c, C(1));
  std::vector<C> b = param_or<C>(in[2], a.has_bias, l.c, C(0));
  const T* xp = static_cast<const T*>(x.data_ptr());
  T* yp = static_cast<T*>(out[0].data_ptr());
  C* mp = out[1].data<C>();
  C* rp = out[2].data<C>();
  const int64_t grain = std::max<int64_t>(1, kPointwiseGrain / std::max<int64_t>(seg, 1));
  parallel_for(0, l.n * l.groups, grain, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      const T* xs = xp + k * seg;
      T* ys = yp + k * seg;
      Moments mo = run_moments(xs, seg);
      const C mean = C(mo.mean), r = C(1.0 / std::sqrt(mo.m2 / double(seg) + a.eps));
      mp[k] = mean;
      rp[k] = r;
      for (int64_t ci = 0; ci < l.cg; ++ci) {
        const int64_t c = (k % l.groups) * l.cg + ci;
        const C scale = r * w[c], shift = b[c] - mean * scale;
        const T* xc = xs + ci * l.s;
        T* yc = ys + ci * l.s;
        for (int64_t j = 0; j < l.s; ++j) yc[j] = T(C(xc[j]) * scale + shift);
      }
    }
  });
}

template <class T>
void group_norm_backward_kernel(TensorSpan in, std::span<Tensor> out,
                                const GroupNormBackwardAttrs& a) {
  using C = compute_t<T>;
  Tensor g = dense(in[0]), x = dense(in[1]);
  const GroupLayout l = layout_of(x, a.num_groups);
  const int64_t seg = l.cg * l.s;
  Values<C> mean(in[2]), rstd(in[3]);
  std::vector<C> w = param_or<C>(in[4], a.has_weight, l.c, C(1));
  const bool need_dx = a.mask[0] && !skipped(out[0]);
  const bool need_dw = a.mask[1] && !skipped(out[1]), need_db = a.mask[2] && !skipped(out[2]);
  const T *gp = static_cast<const T*>(g.data_ptr()), *xp = static_cast<const T*>(x.data_ptr());
  T* dxp = need_dx ? static_cast<T*>(out[0].data_ptr()) : nullptr;
  // Per (sample, channel): sum(g) and sum(g * (x - mean)).
  std::vector<double> sg(static_cast<std::size_t>(l.n * l.c)), sgx(sg.size());
  const int64_t grain = std::max<int64_t>(1, kPointwiseGrain / std::max<int64_t>(seg, 1));
  parallel_for(0, l.n * l.groups, grain, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      const int64_t n = k / l.groups, c0 = (k % l.groups) * l.cg;
      const C mu = mean[k], r = rstd[k];
      double a_sum = 0, b_sum = 0;  // sum(g * w), sum(g * w * xh) over the group
      for (int64_t ci = 0; ci < l.cg; ++ci) {
        const T *gc = gp + k * seg + ci * l.s, *xc = xp + k * seg + ci * l.s;
        double s1 = lane_sum<double>(l.s, [gc](int64_t j) { return double(gc[j]); });
        double s2 = lane_sum<double>(
            l.s, [gc, xc, mu](int64_t j) { return double(C(gc[j]) * (C(xc[j]) - mu)); });
        sg[n * l.c + c0 + ci] = s1;
        sgx[n * l.c + c0 + ci] = s2;
        a_sum += double(w[c0 + ci]) * s1;
        b_sum += double(w[c0 + ci]) * s2 * double(r);
      }
      if (!need_dx) continue;
      const C ca = C(a_sum / double(seg)), cb = C(b_sum / double(seg));
      for (int64_t ci = 0; ci < l.cg; ++ci) {
        const int64_t off = k * seg + ci * l.s;
        const C wc = w[c0 + ci];
        for (int64_t j = 0; j < l.s; ++j) {
          C xh = (C(xp[off + j]) - mu) * r;
          dxp[off + j] = T(r * (C(gp[off + j]) * wc - ca - xh * cb));
        }
      }
    }
  });
  if (!need_dw && !need_db) return;
  T* dw = need_dw ? static_cast<T*>(out[1].data_ptr()) : nullptr;
  T* db = need_db ? static_cast<T*>(out[2].data_ptr()) : nullptr;
  for (int64_t c = 0; c < l.c; ++c) {  // C * N work: small next to the passes above
    double sw = 0, sb = 0;
    for (int64_t n = 0; n < l.n; ++n) {
      sw += sgx[n * l.c + c] * double(rstd[n * l.groups + c / l.cg]);
      sb += sg[n * l.c + c];
    }
    if (dw != nullptr) dw[c] = T(C(sw));
    if (db != nullptr) db[c] = T(C(sb));
  }
}

const bool registered = [] {
  register_cpu_floating(op_group_norm(), []<class T>() { return &group_norm_kernel<T>; });
  register_cpu_floating(op_group_norm_backward(),
                        []<class T>() { return &group_norm_backward_kernel<T>; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels
