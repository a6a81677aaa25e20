// CPU kernel for self_attention_backward (attention.h): the gradient of self_attention with
// respect to its packed projection x, one task per (batch, head), run in parallel.
//
// A task recomputes its head's probabilities P = softmax(scale q k^T [causal]) (the forward
// kept nothing but x) and writes the three parts of dx once:
//   dP = dy v^T,   dS = P * (dP - rowsum(P * dP)),
//   dq = scale dS k,   dk = scale dS^T q,   dv = P^T dy.
// Rows are taken 8 at a time for P, dS and dq; then dk and dv 8 key positions at a time, reading
// columns of P and dS in place (self_attention_tiles.h's strided left operand). With causal, a
// row block computes only the columns up to its last row's diagonal and a key block sums only
// the rows from its first position on, so about half of the unmasked work is skipped.
//
// Scratch per thread (float32): k^T and v^T [d][L] and scale k, scale q, dy [L][d] (rows padded
// to 16 with zeros), plus P and dS [L][L]; 0.2 MB at W4's L = 128, d = 32. Heads longer than
// kSelfAttentionFusedMaxLen take the composed gradient (ops/defs/self_attention.cpp) instead, so
// the scratch stays bounded.
// The wide copies contract multiply-adds into FMAs (as self_attention.cpp does): results differ
// from the baseline copy and from the unfused products in the last bits; the AVX2 and AVX-512
// copies agree bitwise. Other dtypes run plain loops in their compute type (the float64
// reference of the op table's checks).
// Memory contract: reads x and dy (non-contiguous ones are first copied dense), writes dx once.
#include <cstring>
#include <vector>

#include "athanor/core/parallel.h"
#include "athanor/ops/attention.h"
#include "common/isa_dispatch.h"
#include "common/lanes.h"
#include "common/nn_common.h"
#include "common/register.h"
#include "self_attention_tiles.h"

namespace ath::kernels {
namespace {

using namespace attention_tiles;

// The dense per-thread blocks of one head (see the file comment).
struct HeadScratch {
  float* kt;   // scale k^T [d][ls]
  float* vt;   // v^T [d][ls]
  float* kd;   // scale k [len][ld]
  float* qd;   // scale q [len][ld]
  float* dyd;  // dy [len][ld]
  float* p;    // P [len][ls]
  float* ds;   // dS [len][ls]
  float* o;    // two row blocks of results [2 kRows][ld]
};

// k, v, q and dy of one head into the scratch blocks, rows padded with zeros. Row-major copies
// first (contiguous runs), then the two transposes from the dense k and v.
ATH_ISA_BODY void load_head(const float* x, const float* dy, const HeadGeometry& g, int64_t b,
                            int64_t h, float scale, const HeadScratch& s) {
  const int64_t w = 3 * g.e, len = g.len, d = g.d, ls = round16(len), ld = round16(d);
  for (int64_t j = 0; j < len; ++j) {
    const float* xr = x + g.row(b, j) * w + h * d;
    const float* gr = dy + g.row(b, j) * g.e + h * d;
    float* kd = s.kd + j * ld;
    float* qd = s.qd + j * ld;
    float* dyd = s.dyd + j * ld;
    for (int64_t e = 0; e < d; ++e) kd[e] = scale * xr[g.e + e];
    for (int64_t e = 0; e < d; ++e) qd[e] = scale * xr[e];
    for (int64_t e = 0; e < d; ++e) dyd[e] = gr[e];
    for (int64_t e = d; e < ld; ++e) kd[e] = qd[e] = dyd[e] = 0.0f;
  }
  for (int64_t e = 0; e < d; ++e)
    for (int64_t j = len; j < ls; ++j) s.kt[e * ls + j] = s.vt[e * ls + j] = 0.0f;
  transpose_scaled(s.kd, ld, len, d, 1.0f, s.kt, ls);
  transpose_scaled(x + g.row(b, 0) * w + 2 * g.e + h * d, g.row_step() * w, len, d, 1.0f, s.vt, ls);
}

// The rows' softmax and its gradient, over each row's first kp columns (n[r] <= kp kept): p
// holds the scores, ds dP = dy v^T. Makes p the probabilities (0 past n) and
// ds = p * (dP - sum(p * dP)). Four passes: the max, exp and its sum, the normalization and
// sum(p * dP), dS; each pass runs over all the rows before the next starts, so the rows'
// horizontal sums (a chain of shuffles each) overlap instead of stalling one row at a time (the
// kernel ran 4-6% slower at W4's shape row by row). Columns past kp are never read: a key block
// reads rows from its own first position on, and each such row's kp reaches past the block (row
// blocks and key blocks are the same kRows-aligned ranges).
template <int W>
ATH_ISA_BODY void softmax_grad_rows(float* const* p, float* const* ds, const int64_t* n, int rows,
                                    int64_t kp) {
  const F16<W> zero = vsplat<W>(0.0f);
  float m[kRows], inv[kRows], dot[kRows];
  for (int r = 0; r < rows; ++r) {
    F16<W> mx = vsplat<W>(-std::numeric_limits<float>::infinity());
    for (int64_t j = 0; j < kp; j += kLanes)
      mx = vmax(mx, vselect(first_lanes<W>(n[r] - j), vload<W>(p[r] + j), mx));
    m[r] = hmax(in_registers(mx));
  }
  for (int r = 0; r < rows; ++r) {
    const F16<W> mr = vsplat<W>(m[r]);
    F16<W> sum = zero;
    for (int64_t j = 0; j < kp; j += kLanes) {
      const F16<W> e = vselect(first_lanes<W>(n[r] - j), exp_fast(vload<W>(p[r] + j) - mr), zero);
      vstore(p[r] + j, e);
      sum = sum + e;
    }
    inv[r] = 1.0f / hsum(in_registers(sum));
  }
  for (int r = 0; r < rows; ++r) {
    F16<W> acc = zero;
    for (int64_t j = 0; j < kp; j += kLanes) {
      const F16<W> pj = vload<W>(p[r] + j) * inv[r];
      vstore(p[r] + j, pj);
      acc = acc + pj * vload<W>(ds[r] + j);
    }
    dot[r] = hsum(in_registers(acc));
  }
  for (int r = 0; r < rows; ++r) {
    const F16<W> d = vsplat<W>(dot[r]);
    for (int64_t j = 0; j < kp; j += kLanes)
      vstore(ds[r] + j, vload<W>(p[r] + j) * (vload<W>(ds[r] + j) - d));
  }
}

// Rows i0 .. i0 + rows - 1: their P and dS rows over the kept columns, and their dq.
template <int W>
ATH_ISA_BODY void grad_row_block(const float* x, float* dx, const HeadGeometry& g, int64_t b,
                                 int64_t h, bool causal, int64_t i0, const HeadScratch& s) {
  const int64_t w = 3 * g.e, len = g.len, d = g.d, ls = round16(len), ld = round16(d);
  const int rows = static_cast<int>(std::min<int64_t>(kRows, len - i0));
  const int64_t kept = causal ? std::min(i0 + rows, len) : len;  // columns the block needs
  const int64_t kp = round16(kept);
  const float* q[kRows];
  const float* gy[kRows];
  float* pr[kRows];
  float* sr[kRows];
  float* orow[kRows];
  for (int r = 0; r < kRows; ++r) {
    const int64_t i = i0 + std::min(r, rows - 1);  // a short block repeats its last row
    q[r] = x + g.row(b, i) * w + h * d;
    gy[r] = s.dyd + i * ld;
    pr[r] = s.p + i * ls;
    sr[r] = s.ds + i * ls;
    orow[r] = s.o + (i - i0) * ld;
  }
  product_rows<W>(q, 1, s.kt, ls, d, kp, rows, nullptr, pr);   // scale q k^T
  product_rows<W>(gy, 1, s.vt, ls, d, kp, rows, nullptr, sr);  // dP = dy v^T
  int64_t n[kRows];
  for (int r = 0; r < rows; ++r) n[r] = causal ? i0 + r + 1 : len;
  softmax_grad_rows<W>(pr, sr, n, rows, kp);
  product_rows<W>(sr, 1, s.kd, ld, kept, ld, rows, nullptr, orow);  // dq = dS (scale k)
  for (int r = 0; r < rows; ++r)
    std::memcpy(dx + g.row(b, i0 + r) * w + h * d, orow[r],
                static_cast<std::size_t>(d) * sizeof(float));
}

// Key positions j0 .. j0 + rows - 1: their dk and dv, from columns of dS and P.
template <int W>
ATH_ISA_BODY void grad_key_block(float* dx, const HeadGeometry& g, int64_t b, int64_t h,
                                 bool causal, int64_t j0, const HeadScratch& s) {
  const int64_t w = 3 * g.e, len = g.len, d = g.d, ls = round16(len), ld = round16(d);
  const int rows = static_cast<int>(std::min<int64_t>(kRows, len - j0));
  const int64_t first = causal ? j0 : 0;  // rows before the block's first key see none of it
  const float* pc[kRows];
  const float* sc[kRows];
  float* dk[kRows];
  float* dv[kRows];
  for (int r = 0; r < kRows; ++r) {
    const int64_t j = j0 + std::min(r, rows - 1);
    pc[r] = s.p + first * ls + j;
    sc[r] = s.ds + first * ls + j;
    dk[r] = s.o + (j - j0) * ld;
    dv[r] = s.o + (kRows + j - j0) * ld;
  }
  product_rows<W>(sc, ls, s.qd + first * ld, ld, len - first, ld, rows, nullptr, dk);
  product_rows<W>(pc, ls, s.dyd + first * ld, ld, len - first, ld, rows, nullptr, dv);
  for (int r = 0; r < rows; ++r) {
    float* row = dx + g.row(b, j0 + r) * w + h * d;
    std::memcpy(row + g.e, dk[r], static_cast<std::size_t>(d) * sizeof(float));
    std::memcpy(row + 2 * g.e, dv[r], static_cast<std::size_t>(d) * sizeof(float));
  }
}

template <int W>
ATH_ISA_BODY void head_grad_f32_body(const float* x, const float* dy, float* dx, HeadGeometry g,
                                     int64_t b, int64_t h, bool causal, float scale,
                                     HeadScratch s) {
  load_head(x, dy, g, b, h, scale, s);
  for (int64_t i0 = 0; i0 < g.len; i0 += kRows) grad_row_block<W>(x, dx, g, b, h, causal, i0, s);
  for (int64_t j0 = 0; j0 < g.len; j0 += kRows) grad_key_block<W>(dx, g, b, h, causal, j0, s);
}
ATH_ISA_DISPATCH_W(head_grad_f32,
                   (const float* x, const float* dy, float* dx, HeadGeometry g, int64_t b,
                    int64_t h, bool causal, float scale, HeadScratch s),
                   (x, dy, dx, g, b, h, causal, scale, s))

// Any dtype, in its compute type: the loops the float32 tiles stand for.
template <class T>
void head_grad_generic(const T* x, const T* dy, T* dx, const HeadGeometry& g, int64_t b, int64_t h,
                       bool causal, double scale) {
  using C = compute_t<T>;
  const int64_t w = 3 * g.e, len = g.len, d = g.d;
  auto at = [&](int64_t part, int64_t l, int64_t e) {
    return C(x[g.row(b, l) * w + part * g.e + h * d + e]);
  };
  auto gy = [&](int64_t l, int64_t e) { return C(dy[g.row(b, l) * g.e + h * d + e]); };
  const std::size_t n2 = static_cast<std::size_t>(len * len);
  std::vector<C> p(n2, C(0)), ds(n2, C(0));
  for (int64_t i = 0; i < len; ++i) {
    const int64_t n = causal ? i + 1 : len;
    C* pi = p.data() + i * len;
    C* si = ds.data() + i * len;
    C m = -std::numeric_limits<C>::infinity(), z = 0;
    for (int64_t j = 0; j < n; ++j) {
      C dot = 0;
      for (int64_t e = 0; e < d; ++e) dot += at(0, i, e) * at(1, j, e);
      pi[j] = C(scale) * dot;
      m = std::max(m, pi[j]);
    }
    for (int64_t j = 0; j < n; ++j) z += pi[j] = exp_c<C>(pi[j] - m);
    C rowdot = 0;
    for (int64_t j = 0; j < n; ++j) {
      pi[j] /= z;
      C dp = 0;
      for (int64_t e = 0; e < d; ++e) dp += gy(i, e) * at(2, j, e);
      si[j] = dp;
      rowdot += pi[j] * dp;
    }
    for (int64_t j = 0; j < n; ++j) si[j] = pi[j] * (si[j] - rowdot);
  }
  for (int64_t l = 0; l < len; ++l)
    for (int64_t e = 0; e < d; ++e) {
      C dq = 0, dk = 0, dv = 0;
      for (int64_t j = 0; j < len; ++j) dq += ds[l * len + j] * at(1, j, e);
      for (int64_t i = 0; i < len; ++i) {
        dk += ds[i * len + l] * at(0, i, e);
        dv += p[i * len + l] * gy(i, e);
      }
      T* row = dx + g.row(b, l) * w + h * d + e;
      row[0] = T(C(scale) * dq);
      row[g.e] = T(C(scale) * dk);
      row[2 * g.e] = T(dv);
    }
}

template <class T>
void self_attention_backward_kernel(TensorSpan in, std::span<Tensor> out,
                                    const SelfAttentionAttrs& a) {
  const Tensor dy = dense(in[0]), x = dense(in[1]);
  const HeadGeometry g = HeadGeometry::of(x, a);
  if (g.empty()) return;
  const T* xp = static_cast<const T*>(x.data_ptr());
  const T* gp = static_cast<const T*>(dy.data_ptr());
  T* dxp = static_cast<T*>(out[0].data_ptr());
  parallel_for(0, g.tasks(), 1, [&](int64_t t0, int64_t t1) {
    if constexpr (std::is_same_v<T, float>) {
      const int64_t ls = round16(g.len), ld = round16(g.d);
      thread_local std::vector<float> scratch;
      scratch.resize(static_cast<std::size_t>(2 * g.d * ls + 3 * g.len * ld + 2 * g.len * ls +
                                              2 * kRows * ld));
      HeadScratch s{};
      s.kt = scratch.data();
      s.vt = s.kt + g.d * ls;
      s.kd = s.vt + g.d * ls;
      s.qd = s.kd + g.len * ld;
      s.dyd = s.qd + g.len * ld;
      s.p = s.dyd + g.len * ld;
      s.ds = s.p + g.len * ls;
      s.o = s.ds + g.len * ls;
      for (int64_t t = t0; t < t1; ++t)
        head_grad_f32(xp, gp, dxp, g, t / g.heads, t % g.heads, a.causal, float(a.scale), s);
    } else {
      for (int64_t t = t0; t < t1; ++t)
        head_grad_generic(xp, gp, dxp, g, t / g.heads, t % g.heads, a.causal, a.scale);
    }
  });
}

const bool registered = [] {
  register_cpu_floating(op_self_attention_backward(),
                        []<class T>() { return &self_attention_backward_kernel<T>; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels
