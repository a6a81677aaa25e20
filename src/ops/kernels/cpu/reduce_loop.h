// The CPU loop behind reductions: out[m] = finalize(combine over n of x[m, n]).
//
//   reduce_loop<float, double>(x, dims, out, ReduceOps{...});
//
// Memory contract: reads every element of x once (a non-contiguous x whose reduced elements
// are not adjacent is first copied into a contiguous buffer); writes each element of `out`
// (contiguous, reduced shape) once.
//
// Order and threads: each output is reduced by one thread, in index order, over fixed 16-lane
// strips and fixed 32768-element chunks whose partials combine in sequence. A full reduction of
// one large tensor parallelises over those chunks. The arithmetic is therefore the same whatever
// the thread count: results are bitwise reproducible.
#pragma once

#include <algorithm>
#include <vector>

#include "athanor/core/parallel.h"
#include "athanor/tensor/tensor.h"
#include "pointwise_loop.h"

namespace ath::kernels {

inline constexpr int64_t kReduceChunk = 32768;
inline constexpr int kLanes = 16;

// Permutes x so the kept dims come first and the reduced dims last, returning the number of
// outputs M and of reduced elements per output N.
Tensor reduction_view(const Tensor& x, const DimList& dims, int64_t& m, int64_t& n);

// Combine over a contiguous run in fixed 16-lane strips: vectorizes for associative ops.
template <class T, class Acc, class Combine>
Acc reduce_run(const T* p, int64_t n, Acc init, const Combine& combine) {
  Acc lanes[kLanes];
  for (int l = 0; l < kLanes; ++l) lanes[l] = init;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l)
      lanes[l] = combine(lanes[l], static_cast<Acc>(load(p + i + l)));
  }
  for (int l = 0; i < n; ++i, ++l) lanes[l] = combine(lanes[l], static_cast<Acc>(load(p + i)));
  for (int w = kLanes / 2; w >= 1; w /= 2) {  // pairwise tree: fixed order
    for (int l = 0; l < w; ++l) lanes[l] = combine(lanes[l], lanes[l + w]);
  }
  return lanes[0];
}

template <class T, class Acc, class Combine>
Acc reduce_chunked(const T* p, int64_t n, Acc init, const Combine& combine) {
  if (n <= kReduceChunk) return reduce_run<T, Acc>(p, n, init, combine);
  int64_t chunks = (n + kReduceChunk - 1) / kReduceChunk;
  std::vector<Acc> partial(static_cast<std::size_t>(chunks), init);
  parallel_for(0, chunks, 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) {
      int64_t start = c * kReduceChunk, len = std::min(kReduceChunk, n - start);
      partial[static_cast<std::size_t>(c)] = reduce_run<T, Acc>(p + start, len, init, combine);
    }
  });
  Acc acc = init;
  for (Acc v : partial) acc = combine(acc, v);
  return acc;
}

// out[m] = finalize(reduce over n of x[m, n]) for every m. Out is the output storage type.
template <class T, class Acc, class Out, class Combine, class Finalize>
void reduce_loop(const Tensor& x, const DimList& dims, Tensor& out, Acc init,
                 const Combine& combine, const Finalize& finalize) {
  int64_t m = 0, n = 0;
  Tensor xv = reduction_view(x, dims, m, n);
  const T* p = static_cast<const T*>(xv.data_ptr());
  Out* o = static_cast<Out*>(out.data_ptr());
  if (m == 1) {
    o[0] = static_cast<Out>(finalize(reduce_chunked<T, Acc>(p, n, init, combine)));
    return;
  }
  int64_t grain = std::max<int64_t>(1, kPointwiseGrain / std::max<int64_t>(n, 1));
  parallel_for(0, m, grain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      o[i] = static_cast<Out>(finalize(reduce_run<T, Acc>(p + i * n, n, init, combine)));
    }
  });
}

}  // namespace ath::kernels
