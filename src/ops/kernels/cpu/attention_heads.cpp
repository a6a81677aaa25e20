// CPU kernels for split_heads and merge_heads.
//
// Memory contract: split reads every element of x once (a non-contiguous x is first copied to a
// dense scratch) and writes each part once; merge reads each part once, in place, with its own
// strides, and writes every element of the merged tensor once. Work is split over the
// rows of the [d0, d1, parts * heads * d] side: each row is one (batch, position) pair whose
// parts * heads runs of d contiguous elements go to (come from) [B, heads, L, d] tensors.
#include <algorithm>

#include "athanor/core/parallel.h"
#include "athanor/ops/attention.h"
#include "common/nn_common.h"
#include "common/register.h"

namespace ath::kernels {
namespace {

struct HeadsLayout {
  int64_t d0, d1, width, heads, d, len, parts;
  bool batch_first;
  // Offset of (part-local) head h's run for row r = (i0, i1) in a [B, heads, L, d] tensor.
  int64_t part_offset(int64_t r, int64_t h) const {
    const int64_t i0 = r / d1, i1 = r % d1;
    const int64_t b = batch_first ? i0 : i1, l = batch_first ? i1 : i0;
    return ((b * heads + h) * len + l) * d;
  }
};

HeadsLayout layout(const Tensor& packed, const HeadsAttrs& a, int64_t parts) {
  HeadsLayout l{packed.size(0), packed.size(1), packed.size(2), a.heads, 0, 0,
                parts,          a.batch_first};
  l.d = l.width / (parts * a.heads);
  l.len = a.batch_first ? l.d1 : l.d0;
  return l;
}

template <class Fn>
void for_rows(const HeadsLayout& l, const Fn& fn) {
  if (l.d0 * l.d1 * l.width == 0) return;
  const int64_t grain = std::max<int64_t>(1, kPointwiseGrain / l.width);
  parallel_for(0, l.d0 * l.d1, grain, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) fn(r);
  });
}

template <class T>
void split_heads_kernel(TensorSpan in, std::span<Tensor> out, const HeadsAttrs& a) {
  Tensor x = dense(in[0]);
  const HeadsLayout l = layout(x, a, a.parts);
  const T* xp = static_cast<const T*>(x.data_ptr());
  T* parts[3] = {};
  for (int64_t p = 0; p < a.parts; ++p) parts[p] = static_cast<T*>(out[p].data_ptr());
  for_rows(l, [&](int64_t r) {
    const T* row = xp + r * l.width;
    for (int64_t p = 0; p < l.parts; ++p) {
      for (int64_t h = 0; h < l.heads; ++h) {
        std::copy_n(row + (p * l.heads + h) * l.d, l.d, parts[p] + l.part_offset(r, h));
      }
    }
  });
}

// Parts are read in place with their own strides: in a backward pass they are often transposed
// views (a matrix product's gradient computed as (g^T a)^T), which a dense copy first would
// transpose once more for nothing. A part whose head dimension is strided is read in tiles of up
// to kTileRows consecutive rows: per element of the head dimension, the tile's rows are one
// contiguous run of the part (its position or batch axis has stride 1 in such a view), written
// down a column of the tile, which stays in L1. Element by element, each read took a cache line
// of its own (W4's backward merge: 143 us for 1 MB).
template <class T>
void merge_heads_kernel(TensorSpan in, std::span<Tensor> out, const HeadsAttrs& a) {
  constexpr int64_t kTileRows = 16;
  const int64_t n = static_cast<int64_t>(in.size());
  const T* parts[3] = {};
  for (int64_t p = 0; p < n; ++p) parts[p] = static_cast<const T*>(in[p].data_ptr());
  const HeadsLayout l = layout(out[0], a, n);
  T* op = static_cast<T*>(out[0].data_ptr());
  if (l.d0 * l.d1 * l.width == 0) return;
  const int64_t grain = std::max<int64_t>(kTileRows, kPointwiseGrain / l.width);
  parallel_for(0, l.d0 * l.d1, grain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end;) {
      const int64_t i0 = r / l.d1, i1 = r % l.d1;
      // Rows r .. r + rows share i0; along them i1 (the position when batch-first, else the
      // batch index) steps by one.
      const int64_t rows = std::min({kTileRows, end - r, l.d1 - i1});
      const int64_t b = l.batch_first ? i0 : i1, pos = l.batch_first ? i1 : i0;
      T* tile = op + r * l.width;
      for (int64_t p = 0; p < l.parts; ++p) {
        const Strides& st = in[p].strides();
        const int64_t row_step = l.batch_first ? st[2] : st[0];
        for (int64_t h = 0; h < l.heads; ++h) {
          const T* src = parts[p] + b * st[0] + h * st[1] + pos * st[2];
          T* dst = tile + (p * l.heads + h) * l.d;
          if (st[3] == 1) {
            for (int64_t i = 0; i < rows; ++i)
              std::copy_n(src + i * row_step, l.d, dst + i * l.width);
          } else {
            for (int64_t j = 0; j < l.d; ++j) {
              const T* column = src + j * st[3];
              for (int64_t i = 0; i < rows; ++i) dst[i * l.width + j] = column[i * row_step];
            }
          }
        }
      }
      r += rows;
    }
  });
}

const bool registered = [] {
  register_cpu_all(op_split_heads(), []<class T>() { return &split_heads_kernel<T>; });
  register_cpu_all(op_merge_heads(), []<class T>() { return &merge_heads_kernel<T>; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels
