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
//   scores: a tile of rows x 16-lane vectors of accumulators (self_attention_tiles.h, per ISA),
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
#include "self_attention_tiles.h"

namespace ath::kernels {
namespace {

using namespace attention_tiles;

// One head: x and out at the head's batch element; kt, v, s, o scratch (see the file comment).
template <int W>
ATH_ISA_BODY void head_f32_body(const float* x, float* out, HeadGeometry g, int64_t b, int64_t h,
                                bool causal, float scale, float* kt, float* vd, float* s,
                                float* o) {
  const int64_t w = 3 * g.e, len = g.len, d = g.d;
  const int64_t ls = round16(len), ld = round16(d);  // padded row lengths of kt / s and of vd / o
  for (int64_t e = 0; e < d; ++e)
    for (int64_t j = ls - 1; j >= len; --j) kt[e * ls + j] = 0.0f;
  transpose_scaled(x + g.row(b, 0) * w + g.e + h * d, g.row_step() * w, len, d, scale, kt, ls);
  for (int64_t j = 0; j < len; ++j) {
    const float* xr = x + g.row(b, j) * w + h * d;
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
    product_rows<W>(q, 1, kt, ls, d, round16(kept), rows, nullptr, sr);
    float inv[kRows];
    for (int r = 0; r < kRows; ++r) {
      const int64_t i = i0 + std::min(r, rows - 1);
      const int64_t n = causal ? std::min(i + 1, len) : len;
      inv[r] = r < rows ? exp_row_f32<W>(sr[r], n, round16(kept)) : inv[rows - 1];
    }
    product_rows<W>(sr, 1, vd, ld, kept, ld, rows, inv, orow);
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
  const HeadGeometry g = HeadGeometry::of(x, a);
  if (g.empty()) return;
  const T* xp = static_cast<const T*>(x.data_ptr());
  T* op = static_cast<T*>(out[0].data_ptr());
  parallel_for(0, g.tasks(), 1, [&](int64_t t0, int64_t t1) {
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
