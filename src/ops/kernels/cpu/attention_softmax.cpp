// CPU kernels for attention_softmax and attention_softmax_backward.
//
// Memory contract: inputs are read (a non-contiguous input is first copied to a dense scratch);
// the output (contiguous) is written once per element. The work is a set of rows of length S
// (the last dim); row r is row i = r % L of its [L, S] matrix. With causal only the first
// min(i + 1, S) entries of a row are read; the rest of the output row is written as 0, so the
// masked half of a causal score matrix costs one store per element and no exp. One thread owns
// a row and sums it in a fixed order (lane_sum), so results do not depend on the thread count.
// float32 rows run in loops compiled per ISA (isa_dispatch.h); 16-bit floats compute in float.
#include <cstring>
#include <limits>
#include <vector>

#include "athanor/core/parallel.h"
#include "athanor/ops/attention.h"
#include "common/isa_dispatch.h"
#include "common/nn_common.h"
#include "common/register.h"
#include "common/softmax_row.h"

namespace ath::kernels {
namespace {

struct Rows {
  int64_t count = 0, len = 1, l = 1;  // rows, row length S, rows per matrix L
};

Rows rows_of(const Tensor& t) {
  Rows r;
  r.len = t.size(-1);
  r.l = t.dim() >= 2 ? t.size(-2) : 1;
  r.count = r.len == 0 ? 0 : t.numel() / r.len;
  return r;
}

// Row ranges for parallel_for: about kPointwiseGrain elements each.
int64_t row_grain(const Rows& r) {
  return std::max<int64_t>(1, kPointwiseGrain / std::max<int64_t>(r.len, 1));
}

// Runs fn(row, kept) over every row in parallel; kept = entries of the row that are not masked.
template <class Fn>
void for_rows(const Rows& r, bool causal, const Fn& fn) {
  if (r.count == 0) return;
  parallel_for(0, r.count, row_grain(r), [&](int64_t b, int64_t e) {
    for (int64_t row = b; row < e; ++row) {
      fn(row, causal ? std::min(row % r.l + 1, r.len) : r.len);
    }
  });
}

// Rows [r0, r1) of the float32 forward and backward, compiled per ISA with its vector width W
// (isa_dispatch.h, lanes.h).
template <int W>
ATH_ISA_BODY void softmax_rows_f32_body(const float* xp, float* yp, int64_t r0, int64_t r1, Rows r,
                                        bool causal, float scale) {
  for (int64_t row = r0; row < r1; ++row) {
    const int64_t n = causal ? std::min(row % r.l + 1, r.len) : r.len;
    softmax_row_f32<W>(xp + row * r.len, yp + row * r.len, n, r.len, scale);
  }
}

ATH_ISA_DISPATCH_W(softmax_rows_f32,
                   (const float* xp, float* yp, int64_t r0, int64_t r1, Rows r, bool causal,
                    float scale),
                   (xp, yp, r0, r1, r, causal, scale))

template <int W>
ATH_ISA_BODY void softmax_backward_rows_f32_body(const float* gp, const float* yp, float* op,
                                                 int64_t r0, int64_t r1, Rows r, bool causal,
                                                 float scale) {
  for (int64_t row = r0; row < r1; ++row) {
    const int64_t n = causal ? std::min(row % r.l + 1, r.len) : r.len;
    softmax_backward_row_f32<W>(gp + row * r.len, yp + row * r.len, op + row * r.len, n, r.len,
                                scale);
  }
}
ATH_ISA_DISPATCH_W(softmax_backward_rows_f32,
                   (const float* gp, const float* yp, float* op, int64_t r0, int64_t r1, Rows r,
                    bool causal, float scale),
                   (gp, yp, op, r0, r1, r, causal, scale))

template <class T>
void attention_softmax_kernel(TensorSpan in, std::span<Tensor> out,
                              const AttentionSoftmaxAttrs& a) {
  using C = compute_t<T>;
  Tensor x = dense(in[0]);
  const Rows r = rows_of(x);
  const T* xp = static_cast<const T*>(x.data_ptr());
  T* yp = static_cast<T*>(out[0].data_ptr());
  const C scale = C(a.scale);
  if constexpr (std::is_same_v<T, float>) {
    if (r.count > 0) {
      parallel_for(0, r.count, row_grain(r), [&](int64_t b, int64_t e) {
        softmax_rows_f32(xp, yp, b, e, r, a.causal, scale);
      });
    }
    return;
  }
  for_rows(r, a.causal, [&](int64_t row, int64_t n) {
    const T* xr = xp + row * r.len;
    T* yr = yp + row * r.len;
    const C m = lane_max<C>(n, [xr, scale](int64_t j) { return scale * C(xr[j]); });
    if constexpr (std::is_same_v<T, C>) {
      C s = lane_sum<C>(
          n, [xr, yr, m, scale](int64_t j) { return yr[j] = exp_c<C>(scale * xr[j] - m); });
      const C inv = C(1) / s;
      for (int64_t j = 0; j < n; ++j) yr[j] *= inv;
    } else {  // 16-bit output: keep the exponentials in float until the final rounding
      thread_local std::vector<C> buf;
      buf.resize(static_cast<std::size_t>(n));
      C* e = buf.data();
      C s = lane_sum<C>(
          n, [xr, e, m, scale](int64_t j) { return e[j] = exp_c<C>(scale * C(xr[j]) - m); });
      const C inv = C(1) / s;
      for (int64_t j = 0; j < n; ++j) yr[j] = T(e[j] * inv);
    }
    for (int64_t j = n; j < r.len; ++j) yr[j] = T(0);
  });
}

// scale * y * (g - sum(g * y)) over the kept entries of each row; 0 elsewhere.
template <class T>
void attention_softmax_backward_kernel(TensorSpan in, std::span<Tensor> out,
                                       const AttentionSoftmaxAttrs& a) {
  using C = compute_t<T>;
  Tensor g = dense(in[0]), y = dense(in[1]);
  const Rows r = rows_of(g);
  const T* gp = static_cast<const T*>(g.data_ptr());
  const T* yp = static_cast<const T*>(y.data_ptr());
  T* op = static_cast<T*>(out[0].data_ptr());
  const C scale = C(a.scale);
  if constexpr (std::is_same_v<T, float>) {
    if (r.count > 0) {
      parallel_for(0, r.count, row_grain(r), [&](int64_t b, int64_t e) {
        softmax_backward_rows_f32(gp, yp, op, b, e, r, a.causal, scale);
      });
    }
    return;
  }
  for_rows(r, a.causal, [&](int64_t row, int64_t n) {
    const T *gr = gp + row * r.len, *yr = yp + row * r.len;
    T* orow = op + row * r.len;
    const C s = lane_sum<C>(n, [gr, yr](int64_t j) { return C(gr[j]) * C(yr[j]); });
    for (int64_t j = 0; j < n; ++j) orow[j] = T(scale * C(yr[j]) * (C(gr[j]) - s));
    for (int64_t j = n; j < r.len; ++j) orow[j] = T(0);
  });
}

const bool registered = [] {
  register_cpu_floating(op_attention_softmax(),
                        []<class T>() { return &attention_softmax_kernel<T>; });
  register_cpu_floating(op_attention_softmax_backward(),
                        []<class T>() { return &attention_softmax_backward_kernel<T>; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels
