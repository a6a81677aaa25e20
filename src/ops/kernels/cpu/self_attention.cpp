// CPU kernel for self_attention (attention.h): one task per (batch, head), run in parallel.
//
// A task reads its head's q from the packed projection x [d0, d1, 3E] in place and copies its k
// (transposed, scaled) and v into a per-thread scratch; then, 8 rows at a time, it makes the
// rows' scores, exponentiates them and multiplies by v, dividing by each row's sum as it writes
// its d columns of the merged output [d0, d1, E] once. So no [B, H, L, S] tensor and no head
// copies go through memory. With causal a row block computes only the columns up to its last
// row's diagonal (about half the work).
//
// float32 runs register-tiled loops compiled per ISA on lanes.h's 16-lane vectors in the copy's
// own register width (ATH_ISA_DISPATCH_W; on 64-byte vectors in every copy, GCC split the AVX2
// copy's through the stack and it ran over 20x slower than the AVX-512 one): k^T (scaled) and v are
// first copied into dense scratch blocks padded to 16 columns with zeros, then, per 8-row block,
//   scores: a tile of rows x 16-lane vectors of accumulators (kTileRows / kTileCols, per ISA),
//           one k^T row per step over the head dim;
//   output: the same tile over the head dim, one v row per step over the kept columns.
// The wide copies contract multiply-adds into FMAs (this file is not among those built without
// contraction), so results differ from the baseline copy and from the unfused matmuls in the last
// bits; the AVX2 and AVX-512 copies agree bitwise (same FMAs in the same order; the row max and
// sum in lanes.h's fixed 16-lane order). Other dtypes run plain loops in their compute type.
// Memory contract: reads x (a non-contiguous x is first copied dense), writes out once.
#include <cstring>
#include <limits>
#include <vector>

#include "athanor/core/parallel.h"
#include "athanor/ops/attention.h"
#include "common/isa_dispatch.h"
#include "common/lanes.h"
#include "common/nn_common.h"
#include "common/register.h"

namespace ath::kernels {
namespace {

// Where a head's rows lie in x and in the output.
struct HeadGeometry {
  int64_t batch = 0, len = 0, heads = 0, d = 0, e = 0;  // e = heads * d
  int64_t d1 = 0;                                       // x's dim 1
  bool batch_first = true;
  // The row (of x and of the output) of sequence position l in batch element b.
  int64_t row(int64_t b, int64_t l) const { return batch_first ? b * d1 + l : l * d1 + b; }
};

constexpr int kRows = 8;  // rows per block (scores and exp rows in scratch at once)

// The register tile of the copy whose vectors hold W floats: kTileRows<W> rows x kTileCols<W>
// 16-lane vectors. AVX-512: 8 x 2 (16 of its 32 zmm as accumulators; 4% faster than 4 x 4);
// AVX2: 4 x 1 (8 ymm, so the loaded row and the broadcast fit beside them in its 16: 8 x 1 and
// 4 x 2, 16 accumulators, ran 14-21% slower on W4's shape); baseline: 2 x 1 (8 xmm; 2 x 2, 4 x 1
// and 4 x 2 ran within noise of it).
// Any tile gives the same bits: each output element is its own chain of multiply-adds in one
// order.
template <int W>
inline constexpr int kTileRows = W == 16  ? 8
                                 : W == 8 ? 4
                                          : 2;
template <int W>
inline constexpr int kTileCols = W == 16 ? 2 : 1;

int64_t round16(int64_t n) { return (n + kLanes - 1) / kLanes * kLanes; }

// acc[r][c] = sum over e < d of q_r[e] * kt[e][c0 + 16 c ...]: R rows of scores, C vectors.
template <int W, int R, int C>
ATH_ISA_BODY void score_tile(const float* const* q, const float* kt, int64_t ld, int64_t d,
                             int64_t c0, float* const* out) {
  F16<W> acc[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) acc[r][c] = vsplat<W>(0.0f);
  for (int64_t e = 0; e < d; ++e) {
    const float* k = kt + e * ld + c0;
    F16<W> kv[C];
    for (int c = 0; c < C; ++c) kv[c] = vload<W>(k + c * kLanes);
    for (int r = 0; r < R; ++r) {
      const float qe = q[r][e];
      for (int c = 0; c < C; ++c) acc[r][c] = acc[r][c] + qe * kv[c];
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) vstore(out[r] + c0 + c * kLanes, acc[r][c]);
}

// out_r[c0, c0 + 16 V) = inv_r * sum over j < n of p_r[j] * v[j][...]: R rows, V vectors of the
// head dim.
template <int W, int R, int V>
ATH_ISA_BODY void value_tile(const float* const* p, const float* inv, const float* v, int64_t ld,
                             int64_t n, int64_t c0, float* const* out) {
  F16<W> acc[R][V];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < V; ++c) acc[r][c] = vsplat<W>(0.0f);
  for (int64_t j = 0; j < n; ++j) {
    const float* vr = v + j * ld + c0;
    F16<W> w[V];
    for (int c = 0; c < V; ++c) w[c] = vload<W>(vr + c * kLanes);
    for (int r = 0; r < R; ++r) {
      const float pj = p[r][j];
      for (int c = 0; c < V; ++c) acc[r][c] = acc[r][c] + pj * w[c];
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < V; ++c) vstore(out[r] + c0 + c * kLanes, acc[r][c] * inv[r]);
}

// A block's rows in tiles of kTileRows<W>; rows >= `rows` repeat the last row (same pointers),
// so a tile of repeats only is skipped.
template <int W>
ATH_ISA_BODY void score_rows(const float* const* q, const float* kt, int64_t ld, int64_t d,
                             int64_t cols, int rows, float* const* out) {
  constexpr int R = kTileRows<W>, C = kTileCols<W>;
  static_assert(kRows % R == 0);
  int64_t c0 = 0;
  for (; c0 + C * kLanes <= cols; c0 += C * kLanes)
    for (int r0 = 0; r0 < rows; r0 += R) score_tile<W, R, C>(q + r0, kt, ld, d, c0, out + r0);
  for (; c0 < cols; c0 += kLanes)
    for (int r0 = 0; r0 < rows; r0 += R) score_tile<W, R, 1>(q + r0, kt, ld, d, c0, out + r0);
}

template <int W>
ATH_ISA_BODY void value_rows(const float* const* p, const float* inv, const float* v, int64_t ld,
                             int64_t n, int rows, float* const* out) {
  constexpr int R = kTileRows<W>, C = kTileCols<W>;
  int64_t c0 = 0;
  for (; c0 + C * kLanes <= ld; c0 += C * kLanes)
    for (int r0 = 0; r0 < rows; r0 += R)
      value_tile<W, R, C>(p + r0, inv + r0, v, ld, n, c0, out + r0);
  for (; c0 < ld; c0 += kLanes)
    for (int r0 = 0; r0 < rows; r0 += R)
      value_tile<W, R, 1>(p + r0, inv + r0, v, ld, n, c0, out + r0);
}

// A score row made exp(s - max) over its n kept entries, 0 over [n, padded); returns 1 / the
// sum, which the value tile applies (one pass less than normalizing the row). padded is n
// rounded up to 16 within the row, so every loop runs whole vectors; max and sum meet in
// lane_max's / lane_sum's 16-lane order (lanes.h), whatever W.
template <int W>
ATH_ISA_BODY float exp_row_f32(float* s, int64_t n, int64_t padded) {
  F16<W> mx = vsplat<W>(-std::numeric_limits<float>::infinity());
  for (int64_t j = 0; j < padded; j += kLanes)  // entries past n do not count
    mx = vmax(mx, vselect(first_lanes<W>(n - j), vload<W>(s + j), mx));
  const float m = hmax(mx);
  for (int64_t j = 0; j < padded; ++j) s[j] = exp_fast(s[j] - m);
  for (int64_t j = n; j < padded; ++j) s[j] = 0.0f;
  F16<W> acc = vsplat<W>(0.0f);
  for (int64_t j = 0; j < padded; j += kLanes) acc = acc + vload<W>(s + j);
  return 1.0f / hsum(acc);
}

// One head: x and out at the head's batch element; kt, v, s, o scratch (see the file comment).
template <int W>
ATH_ISA_BODY void head_f32_body(const float* x, float* out, HeadGeometry g, int64_t b, int64_t h,
                                bool causal, float scale, float* kt, float* vd, float* s,
                                float* o) {
  const int64_t w = 3 * g.e, len = g.len, d = g.d;
  const int64_t ls = round16(len), ld = round16(d);  // padded row lengths of kt / s and of vd / o
  for (int64_t e = 0; e < d; ++e)
    for (int64_t j = ls - 1; j >= len; --j) kt[e * ls + j] = 0.0f;
  for (int64_t j = 0; j < len; ++j) {
    const float* xr = x + g.row(b, j) * w + h * d;
    for (int64_t e = 0; e < d; ++e) kt[e * ls + j] = scale * xr[g.e + e];
    float* vr = vd + j * ld;
    std::memcpy(vr, xr + 2 * g.e, static_cast<std::size_t>(d) * sizeof(float));
    for (int64_t c = d; c < ld; ++c) vr[c] = 0.0f;
  }
  for (int64_t i0 = 0; i0 < len; i0 += kRows) {
    const int rows = static_cast<int>(std::min<int64_t>(kRows, len - i0));
    const int64_t last = i0 + rows - 1;
    const int64_t kept = causal ? std::min(last + 1, len) : len;  // columns the block needs
    const float* q[kRows];
    float* sr[kRows];
    float* orow[kRows];
    for (int r = 0; r < kRows; ++r) {
      const int64_t i = i0 + std::min(r, rows - 1);  // a short block repeats its last row
      q[r] = x + g.row(b, i) * w + h * d;
      sr[r] = s + (i - i0) * ls;
      orow[r] = o + (i - i0) * ld;
    }
    score_rows<W>(q, kt, ls, d, round16(kept), rows, sr);
    float inv[kRows];
    for (int r = 0; r < kRows; ++r) {
      const int64_t i = i0 + std::min(r, rows - 1);
      const int64_t n = causal ? std::min(i + 1, len) : len;
      inv[r] = r < rows ? exp_row_f32<W>(sr[r], n, round16(kept)) : inv[rows - 1];
    }
    value_rows<W>(sr, inv, vd, ld, kept, rows, orow);
    for (int r = 0; r < rows; ++r) {
      std::memcpy(out + g.row(b, i0 + r) * g.e + h * d, orow[r],
                  static_cast<std::size_t>(d) * sizeof(float));
    }
  }
}
ATH_ISA_DISPATCH_W(head_f32,
                   (const float* x, float* out, HeadGeometry g, int64_t b, int64_t h, bool causal,
                    float scale, float* kt, float* vd, float* s, float* o),
                   (x, out, g, b, h, causal, scale, kt, vd, s, o))

// Any dtype, in its compute type: the loops the float32 tiles stand for.
template <class T>
void head_generic(const T* x, T* out, const HeadGeometry& g, int64_t b, int64_t h, bool causal,
                  double scale) {
  using C = compute_t<T>;
  const int64_t w = 3 * g.e, len = g.len, d = g.d;
  auto at = [&](int64_t part, int64_t l, int64_t e) {
    return C(x[g.row(b, l) * w + part * g.e + h * d + e]);
  };
  std::vector<C> p(static_cast<std::size_t>(len));
  for (int64_t i = 0; i < len; ++i) {
    const int64_t n = causal ? i + 1 : len;
    C m = -std::numeric_limits<C>::infinity();
    for (int64_t j = 0; j < n; ++j) {
      C dot = 0;
      for (int64_t e = 0; e < d; ++e) dot += at(0, i, e) * at(1, j, e);
      p[static_cast<std::size_t>(j)] = C(scale) * dot;
      m = std::max(m, p[static_cast<std::size_t>(j)]);
    }
    C z = 0;
    for (int64_t j = 0; j < n; ++j)
      z += p[static_cast<std::size_t>(j)] = exp_c<C>(p[static_cast<std::size_t>(j)] - m);
    for (int64_t e = 0; e < d; ++e) {
      C acc = 0;
      for (int64_t j = 0; j < n; ++j) acc += p[static_cast<std::size_t>(j)] * at(2, j, e);
      out[g.row(b, i) * g.e + h * d + e] = T(acc / z);
    }
  }
}

template <class T>
void self_attention_kernel(TensorSpan in, std::span<Tensor> out, const SelfAttentionAttrs& a) {
  const Tensor x = dense(in[0]);
  HeadGeometry g{.heads = a.heads, .d1 = x.size(1), .batch_first = a.batch_first};
  g.batch = a.batch_first ? x.size(0) : x.size(1);
  g.len = a.batch_first ? x.size(1) : x.size(0);
  g.e = x.size(2) / 3;
  g.d = g.e / a.heads;
  const int64_t tasks = g.batch * g.heads;
  if (tasks == 0 || g.len == 0 || g.d == 0) return;
  const T* xp = static_cast<const T*>(x.data_ptr());
  T* op = static_cast<T*>(out[0].data_ptr());
  parallel_for(0, tasks, 1, [&](int64_t t0, int64_t t1) {
    if constexpr (std::is_same_v<T, float>) {
      const int64_t ls = round16(g.len), ld = round16(g.d);
      thread_local std::vector<float> scratch;
      scratch.resize(static_cast<std::size_t>(g.d * ls + g.len * ld + kRows * ls + kRows * ld));
      float* kt = scratch.data();
      float* vd = kt + g.d * ls;
      float* s = vd + g.len * ld;
      float* o = s + kRows * ls;
      for (int64_t t = t0; t < t1; ++t)
        head_f32(xp, op, g, t / g.heads, t % g.heads, a.causal, float(a.scale), kt, vd, s, o);
    } else {
      for (int64_t t = t0; t < t1; ++t)
        head_generic(xp, op, g, t / g.heads, t % g.heads, a.causal, a.scale);
    }
  });
}

const bool registered = [] {
  register_cpu_floating(op_self_attention(), []<class T>() { return &self_attention_kernel<T>; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels
