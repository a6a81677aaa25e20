// CPU kernels for batch_norm and batch_norm_backward. x is viewed as [N, C, S]; a row is the S
// contiguous elements of one (sample, channel). Statistics accumulate in double, elementwise
// math runs in float (double for float64).
//
// Memory contract. Forward (training): pass 1 reads every row once for its moments (in
// cache-sized chunks) into a per-row scratch, merged per channel over samples in order; pass 2
// reads x again and writes y once. Eval skips pass 1 (running stats are read, never written:
// the public function updates them). Writes mean/rstd/unbiased var per channel. Backward: pass
// 1 reads g and x for per-row sums, merged per channel in sample order; pass 2 reads them again
// to write dx (training) or reads g alone (eval). Nothing depends on the thread count.
#include <vector>

#include "athanor/core/parallel.h"
#include "athanor/ops/nn_functional.h"
#include "common/nn_common.h"
#include "common/register.h"

namespace ath::kernels {
namespace {

struct BatchLayout {
  int64_t n, c, s;
};

BatchLayout layout_of(const Tensor& x) {
  int64_t s = 1;
  for (int64_t d = 2; d < x.dim(); ++d) s *= x.shape()[d];
  return {x.shape()[0], x.shape()[1], s};
}

int64_t row_grain(int64_t s) {
  return std::max<int64_t>(1, kPointwiseGrain / std::max<int64_t>(s, 1));
}

template <class T>
void batch_norm_kernel(TensorSpan in, std::span<Tensor> out, const BatchNormAttrs& a) {
  using C = compute_t<T>;
  Tensor x = dense(in[0]);
  const BatchLayout l = layout_of(x);
  const T* xp = static_cast<const T*>(x.data_ptr());
  T* yp = static_cast<T*>(out[0].data_ptr());
  C* mp = out[1].data<C>();
  C* rp = out[2].data<C>();
  if (a.training) {
    std::vector<Moments> rows(static_cast<std::size_t>(l.n * l.c));
    parallel_for(0, l.n * l.c, row_grain(l.s), [&](int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k) rows[k] = run_moments(xp + k * l.s, l.s);
    });
    C* vp = out[3].data<C>();
    for (int64_t c = 0; c < l.c; ++c) {
      Moments m;
      for (int64_t n = 0; n < l.n; ++n) m = merge(m, rows[n * l.c + c]);
      mp[c] = C(m.mean);
      rp[c] = C(1.0 / std::sqrt(m.m2 / m.n + a.eps));
      vp[c] = C(m.m2 / (m.n - 1));
    }
  } else {
    Values<C> rm(in[1]), rv(in[2]);
    for (int64_t c = 0; c < l.c; ++c) {
      mp[c] = rm[c];
      rp[c] = C(1.0 / std::sqrt(double(rv[c]) + a.eps));
    }
  }
  std::vector<C> w = param_or<C>(in[3], a.has_weight, l.c, C(1));
  std::vector<C> bias = param_or<C>(in[4], a.has_bias, l.c, C(0));
  parallel_for(0, l.n * l.c, row_grain(l.s), [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      const int64_t c = k % l.c;
      const C scale = rp[c] * w[c], shift = bias[c] - mp[c] * scale;
      const T* xr = xp + k * l.s;
      T* yr = yp + k * l.s;
      for (int64_t j = 0; j < l.s; ++j) yr[j] = T(C(xr[j]) * scale + shift);
    }
  });
}

template <class T>
void batch_norm_backward_kernel(TensorSpan in, std::span<Tensor> out,
                                const BatchNormBackwardAttrs& a) {
  using C = compute_t<T>;
  Tensor g = dense(in[0]), x = dense(in[1]);
  const BatchLayout l = layout_of(x);
  Values<C> mean(in[2]), rstd(in[3]);
  std::vector<C> w = param_or<C>(in[4], a.has_weight, l.c, C(1));
  const bool need_dx = a.mask[0] && !skipped(out[0]);
  const bool need_dw = a.mask[1] && !skipped(out[1]), need_db = a.mask[2] && !skipped(out[2]);
  const T *gp = static_cast<const T*>(g.data_ptr()), *xp = static_cast<const T*>(x.data_ptr());
  // Per channel: sum(g) and sum(g * (x - mean)), needed by dw, db and training dx.
  std::vector<double> sg(static_cast<std::size_t>(l.c)), sgx(sg.size());
  if (need_dw || need_db || (need_dx && a.training)) {
    std::vector<double> rg(static_cast<std::size_t>(l.n * l.c)), rgx(rg.size());
    parallel_for(0, l.n * l.c, row_grain(l.s), [&](int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k) {
        const T *gr = gp + k * l.s, *xr = xp + k * l.s;
        const C mu = mean[k % l.c];
        rg[k] = lane_sum<double>(l.s, [gr](int64_t j) { return double(gr[j]); });
        rgx[k] = lane_sum<double>(
            l.s, [gr, xr, mu](int64_t j) { return double(C(gr[j]) * (C(xr[j]) - mu)); });
      }
    });
    for (int64_t c = 0; c < l.c; ++c) {
      for (int64_t n = 0; n < l.n; ++n) {
        sg[c] += rg[n * l.c + c];
        sgx[c] += rgx[n * l.c + c];
      }
    }
  }
  if (need_dw) {
    T* dw = static_cast<T*>(out[1].data_ptr());
    for (int64_t c = 0; c < l.c; ++c) dw[c] = T(C(sgx[c] * double(rstd[c])));
  }
  if (need_db) {
    T* db = static_cast<T*>(out[2].data_ptr());
    for (int64_t c = 0; c < l.c; ++c) db[c] = T(C(sg[c]));
  }
  if (!need_dx) return;
  T* dxp = static_cast<T*>(out[0].data_ptr());
  const double count = double(l.n * l.s);
  parallel_for(0, l.n * l.c, row_grain(l.s), [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      const int64_t c = k % l.c;
      const C r = rstd[c], wr = w[c] * r, mu = mean[c];
      const T *gr = gp + k * l.s, *xr = xp + k * l.s;
      T* dr = dxp + k * l.s;
      if (!a.training) {
        for (int64_t j = 0; j < l.s; ++j) dr[j] = T(C(gr[j]) * wr);
        continue;
      }
      // dx = w * r * (g - mean(g) - (x - mean) * r^2 * mean(g * (x - mean)))
      const C gm = C(sg[c] / count), k2 = C(sgx[c] / count * double(r) * double(r));
      for (int64_t j = 0; j < l.s; ++j) dr[j] = T(wr * (C(gr[j]) - gm - (C(xr[j]) - mu) * k2));
    }
  });
}

const bool registered = [] {
  register_cpu_floating(op_batch_norm(), []<class T>() { return &batch_norm_kernel<T>; });
  register_cpu_floating(op_batch_norm_backward(),
                        []<class T>() { return &batch_norm_backward_kernel<T>; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels
