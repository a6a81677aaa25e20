// The CPU loop behind reductions: out[m] = finalize(combine over n of map(x[m, n])).
//
//   reduce_loop<float, float, float>(x, dims, out, 0.f, plus, identity);          // sum
//   reduce_loop<float, float, float>(x, dims, out, 0.f, plus, sqrt_fn, square);   // 2-norm
//
// Memory contract: reads every element of x once; writes each element of `out` (contiguous,
// reduced shape) once. A contiguous x whose reduced dims are its innermost (after dropping size-1
// dims) or form one block in front of kept inner dims — sum over dim 0 of [N, C], the
// bias-gradient case — is read in place; any other layout is first copied into a permuted
// contiguous buffer.
//
// Order and threads: output m combines its elements in fixed 16 lanes (element i of the reduced
// range goes to lane i % 16, in index order), then folds the lanes in a fixed pairwise tree. The
// inner path runs that over a contiguous run; the outer path keeps 16 lane-rows of accumulators
// per block of outputs and adds input rows into them, vectorized over the outputs, in the same
// order — both paths give the same bits. A full reduction (one output) of a large tensor splits
// into fixed 32768-element chunks whose partials combine in sequence. Nothing depends on the
// thread count, so results are bitwise reproducible with 1 or N threads.
#pragma once

#include <algorithm>
#include <memory>
#include <type_traits>
#include <vector>

#include "athanor/core/parallel.h"
#include "athanor/tensor/tensor.h"
#include "pointwise_loop.h"

namespace ath::kernels {

inline constexpr int64_t kReduceChunk = 32768;
inline constexpr int kLanes = 16;
inline constexpr int64_t kOuterBlock = 256;  // outputs per block on the outer path

// Converts a loaded value to the accumulator type (the default map).
template <class Acc>
struct CastTo {
  template <class V>
  Acc operator()(V v) const {
    return static_cast<Acc>(v);
  }
};

// Max/min that propagate NaN, as torch.amax/amin (the combiners of amax, amin and the
// infinity norms).
template <class C>
C max_nan(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    return (b > a || b != b) ? b : a;
  } else {
    return b > a ? b : a;
  }
}
template <class C>
C min_nan(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    return (b < a || b != b) ? b : a;
  } else {
    return b < a ? b : a;
  }
}

// Permutes x so the kept dims come first and the reduced dims last, returning the number of
// outputs M and of reduced elements per output N. Copies when that view is not contiguous.
Tensor reduction_view(const Tensor& x, const DimList& dims, int64_t& m, int64_t& n);

// When x can be reduced in place as [outer, n, inner] (x contiguous; reduced dims, ignoring
// size-1 dims, form one block followed by at least one kept dim), sets the three sizes.
bool outer_reduction_layout(const Tensor& x, const DimList& dims, int64_t& outer, int64_t& n,
                            int64_t& inner);

// Combine over a contiguous run in fixed 16-lane strips: vectorizes for associative ops.
template <class T, class Acc, class Combine, class Map = CastTo<Acc>>
Acc reduce_run(const T* p, int64_t n, Acc init, const Combine& combine, const Map& map = {}) {
  Acc lanes[kLanes];
  for (int l = 0; l < kLanes; ++l) lanes[l] = init;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) lanes[l] = combine(lanes[l], map(load(p + i + l)));
  }
  for (int l = 0; i < n; ++i, ++l) lanes[l] = combine(lanes[l], map(load(p + i)));
  for (int w = kLanes / 2; w >= 1; w /= 2) {  // pairwise tree: fixed order
    for (int l = 0; l < w; ++l) lanes[l] = combine(lanes[l], lanes[l + w]);
  }
  return lanes[0];
}

template <class T, class Acc, class Combine, class Map = CastTo<Acc>>
Acc reduce_chunked(const T* p, int64_t n, Acc init, const Combine& combine, const Map& map = {}) {
  if (n <= kReduceChunk) return reduce_run<T, Acc>(p, n, init, combine, map);
  int64_t chunks = (n + kReduceChunk - 1) / kReduceChunk;
  std::unique_ptr<Acc[]> partial(new Acc[static_cast<std::size_t>(chunks)]);
  parallel_for(0, chunks, 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) {
      int64_t start = c * kReduceChunk, len = std::min(kReduceChunk, n - start);
      partial[c] = reduce_run<T, Acc>(p + start, len, init, combine, map);
    }
  });
  Acc acc = init;
  for (int64_t c = 0; c < chunks; ++c) acc = combine(acc, partial[c]);
  return acc;
}

// One block of the outer path: the w outputs at dst from n input rows `inner` apart starting at
// base. Input row i is combined into lane-row i % 16 of `lanes` (16 * w accumulators; lane-rows
// are w apart), so every output sees exactly reduce_run's order. When the block spans the whole
// inner dim, 16 consecutive input rows are one contiguous run that maps onto the 16 lane-rows
// element for element: one long vectorized loop per 16 rows. Always inlined, so that a copy
// compiled per ISA (sum_mean.cpp's float sum) vectorizes it at that ISA's width.
template <class T, class Acc, class Out, class Combine, class Finalize, class Map>
[[gnu::always_inline]] inline void reduce_outer_block(const T* base, int64_t n, int64_t inner,
                                                      int64_t w, Acc* lanes, Out* dst, Acc init,
                                                      const Combine& combine,
                                                      const Finalize& finalize, const Map& map) {
  std::fill(lanes, lanes + kLanes * w, init);
  if (w == inner) {
    for (int64_t i = 0; i < n; i += kLanes) {
      const T* src = base + i * inner;
      const int64_t len = std::min<int64_t>(kLanes, n - i) * w;
      for (int64_t k = 0; k < len; ++k) lanes[k] = combine(lanes[k], map(load(src + k)));
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      Acc* lane = lanes + (i % kLanes) * w;
      const T* row = base + i * inner;
      for (int64_t j = 0; j < w; ++j) lane[j] = combine(lane[j], map(load(row + j)));
    }
  }
  for (int s = kLanes / 2; s >= 1; s /= 2) {  // the same pairwise tree as reduce_run
    for (int l = 0; l < s; ++l) {
      Acc* d = lanes + l * w;
      const Acc* src = lanes + (l + s) * w;
      for (int64_t j = 0; j < w; ++j) d[j] = combine(d[j], src[j]);
    }
  }
  for (int64_t j = 0; j < w; ++j) dst[j] = static_cast<Out>(finalize(lanes[j]));
}

// The outer path: x is [outer, n, inner] contiguous, out is [outer, inner]. Blocks of up to
// kOuterBlock outputs run in parallel, each by block(base, n, inner, w, lanes, dst): by default
// reduce_outer_block with the reduction's functions.
template <class T, class Acc, class Out, class Block>
void reduce_outer_blocks(const T* p, int64_t outer, int64_t n, int64_t inner, Out* o,
                         const Block& block) {
  const int64_t blocks_per_outer = (inner + kOuterBlock - 1) / kOuterBlock;
  const int64_t blocks = outer * blocks_per_outer;
  const int64_t work = std::max<int64_t>(n, 1) * std::min(inner, kOuterBlock);
  const int64_t grain = std::max<int64_t>(1, kPointwiseGrain / work);
  parallel_for(0, blocks, grain, [&](int64_t b, int64_t e) {
    // (not std::vector: Acc may be bool)
    std::unique_ptr<Acc[]> acc(new Acc[static_cast<std::size_t>(kLanes * kOuterBlock)]);
    for (int64_t blk = b; blk < e; ++blk) {
      const int64_t a = blk / blocks_per_outer;
      const int64_t c0 = (blk % blocks_per_outer) * kOuterBlock;
      block(p + a * n * inner + c0, n, inner, std::min(kOuterBlock, inner - c0), acc.get(),
            o + a * inner + c0);
    }
  });
}

template <class T, class Acc, class Out, class Combine, class Finalize, class Map>
void reduce_outer(const T* p, int64_t outer, int64_t n, int64_t inner, Out* o, Acc init,
                  const Combine& combine, const Finalize& finalize, const Map& map) {
  reduce_outer_blocks<T, Acc, Out>(
      p, outer, n, inner, o,
      [&](const T* base, int64_t rows, int64_t pitch, int64_t w, Acc* lanes, Out* dst) {
        reduce_outer_block<T, Acc, Out>(base, rows, pitch, w, lanes, dst, init, combine, finalize,
                                        map);
      });
}

// out[m] = finalize(combine over n of map(x[m, n])) for every m. T is x's storage type, Out the
// output storage type; map receives compute values (float for 16-bit floats).
template <class T, class Acc, class Out, class Combine, class Finalize, class Map = CastTo<Acc>>
void reduce_loop(const Tensor& x, const DimList& dims, Tensor& out, Acc init,
                 const Combine& combine, const Finalize& finalize, const Map& map = {}) {
  Out* o = static_cast<Out*>(out.data_ptr());
  if (out.numel() == 0) return;
  int64_t outer = 0, n = 0, inner = 0;
  if (outer_reduction_layout(x, dims, outer, n, inner)) {
    reduce_outer<T, Acc, Out>(static_cast<const T*>(x.data_ptr()), outer, n, inner, o, init,
                              combine, finalize, map);
    return;
  }
  int64_t m = 0;
  Tensor xv = reduction_view(x, dims, m, n);
  const T* p = static_cast<const T*>(xv.data_ptr());
  if (m == 1) {
    o[0] = static_cast<Out>(finalize(reduce_chunked<T, Acc>(p, n, init, combine, map)));
    return;
  }
  int64_t grain = std::max<int64_t>(1, kPointwiseGrain / std::max<int64_t>(n, 1));
  parallel_for(0, m, grain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      o[i] = static_cast<Out>(finalize(reduce_run<T, Acc>(p + i * n, n, init, combine, map)));
    }
  });
}

}  // namespace ath::kernels
