// CPU kernels for amax/amin, max/min along a dim (values + indices) and argmax/argmin.
//
// amax/amin run on reduce_loop (see its header for the memory contract and the fixed,
// thread-count-independent order).
//
// Memory contract (max/min along a dim, argmax/argmin): reads every element of x once (a
// layout that is neither "reduced dim innermost" nor "reduced block before kept inner dims" is
// first copied into a permuted contiguous buffer); writes each output value/index once.
//
// Ties keep the first occurrence and NaN counts as the extremum (the first NaN wins), as in
// PyTorch. Each output scans its elements in index order; a single-output reduction of a large
// tensor scans fixed chunks in parallel and merges their winners in chunk order, which keeps the
// first occurrence — so results do not depend on the thread count.
#include <limits>

#include "athanor/ops/reduction.h"
#include "common/reduce_loop.h"
#include "common/register.h"

namespace ath::kernels {

namespace {

// The identity of max (Max) or min: -inf/+inf for floats, the extreme value otherwise.
template <class C, bool Max>
C extremum_identity() {
  using L = std::numeric_limits<C>;
  if constexpr (std::is_floating_point_v<C>) {
    return Max ? -L::infinity() : L::infinity();
  } else {
    return Max ? L::lowest() : L::max();
  }
}

template <class T, bool Max>
void extremum_kernel(TensorSpan in, std::span<Tensor> out, const ReduceAttrs& a) {
  using C = compute_t<T>;
  const C init = extremum_identity<C, Max>();
  auto same = [](C v) { return v; };
  if constexpr (Max) {
    reduce_loop<T, C, T>(in[0], a.dims, out[0], init, max_nan<C>, same);
  } else {
    reduce_loop<T, C, T>(in[0], a.dims, out[0], init, min_nan<C>, same);
  }
}

template <class C, bool Max>
inline bool better(C v, C best) {
  if constexpr (std::is_floating_point_v<C>) {
    if (v != v) return best == best;  // NaN beats anything but an earlier NaN
  }
  return Max ? v > best : v < best;
}

template <class C>
struct Best {
  C value;
  int64_t index;
};

template <class T, bool Max>
Best<compute_t<T>> scan_run(const T* p, int64_t n, int64_t base) {
  using C = compute_t<T>;
  Best<C> b{load(p), base};
  for (int64_t i = 1; i < n; ++i) {
    C v = load(p + i);
    if (better<C, Max>(v, b.value)) b = {v, base + i};
  }
  return b;
}

template <class T, bool Max>
Best<compute_t<T>> scan_chunked(const T* p, int64_t n) {
  using C = compute_t<T>;
  if (n <= kReduceChunk) return scan_run<T, Max>(p, n, 0);
  const int64_t chunks = (n + kReduceChunk - 1) / kReduceChunk;
  std::vector<Best<C>> part(static_cast<std::size_t>(chunks));
  parallel_for(0, chunks, 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) {
      int64_t start = c * kReduceChunk;
      part[static_cast<std::size_t>(c)] =
          scan_run<T, Max>(p + start, std::min(kReduceChunk, n - start), start);
    }
  });
  Best<C> best = part[0];
  for (const Best<C>& c : part) {
    if (better<C, Max>(c.value, best.value)) best = c;
  }
  return best;
}

// Writes values (when `values` is non-null) and indices of reducing x over `dims` (one dim, or
// all dims for a flattened argmax).
template <class T, bool Max>
void arg_reduce(const Tensor& x, const DimList& dims, T* values, int64_t* indices) {
  using C = compute_t<T>;
  auto emit = [&](int64_t o, const Best<C>& b) {
    if (values != nullptr) values[o] = static_cast<T>(b.value);
    indices[o] = b.index;
  };
  int64_t outer = 0, n = 0, inner = 0;
  if (outer_reduction_layout(x, dims, outer, n, inner)) {
    // Rows of `inner` kept elements: track each column's winner, row by row (no copy).
    const T* p = static_cast<const T*>(x.data_ptr());
    const int64_t per_outer = (inner + kOuterBlock - 1) / kOuterBlock;
    const int64_t grain =
        std::max<int64_t>(1, kPointwiseGrain / (n * std::min(inner, kOuterBlock)));
    parallel_for(0, outer * per_outer, grain, [&](int64_t b, int64_t e) {
      std::vector<Best<C>> best(static_cast<std::size_t>(kOuterBlock));
      for (int64_t blk = b; blk < e; ++blk) {
        const int64_t a = blk / per_outer, c0 = (blk % per_outer) * kOuterBlock;
        const int64_t w = std::min(kOuterBlock, inner - c0);
        const T* base = p + a * n * inner + c0;
        for (int64_t j = 0; j < w; ++j) best[std::size_t(j)] = {load(base + j), 0};
        for (int64_t i = 1; i < n; ++i) {
          const T* row = base + i * inner;
          for (int64_t j = 0; j < w; ++j) {
            C v = load(row + j);
            if (better<C, Max>(v, best[std::size_t(j)].value)) best[std::size_t(j)] = {v, i};
          }
        }
        for (int64_t j = 0; j < w; ++j) emit(a * inner + c0 + j, best[std::size_t(j)]);
      }
    });
    return;
  }
  int64_t m = 0;
  Tensor xv = reduction_view(x, dims, m, n);
  const T* p = static_cast<const T*>(xv.data_ptr());
  if (m == 1) {
    emit(0, scan_chunked<T, Max>(p, n));
    return;
  }
  const int64_t grain = std::max<int64_t>(1, kPointwiseGrain / std::max<int64_t>(n, 1));
  parallel_for(0, m, grain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) emit(i, scan_run<T, Max>(p + i * n, n, 0));
  });
}

template <class T, bool Max>
void dim_kernel(TensorSpan in, std::span<Tensor> out, const DimKeepAttrs& a) {
  if (out[0].numel() == 0) return;
  DimList dims = in[0].dim() == 0 ? DimList{} : DimList{a.dim};
  arg_reduce<T, Max>(in[0], dims, static_cast<T*>(out[0].data_ptr()),
                     static_cast<int64_t*>(out[1].data_ptr()));
}

template <class T, bool Max>
void arg_kernel(TensorSpan in, std::span<Tensor> out, const ArgAttrs& a) {
  if (out[0].numel() == 0) return;
  DimList dims = (!a.dim || in[0].dim() == 0) ? DimList{} : DimList{*a.dim};
  arg_reduce<T, Max>(in[0], dims, nullptr, static_cast<int64_t*>(out[0].data_ptr()));
}

const bool registered = [] {
  register_cpu_all(op_amax(), []<class T>() { return &extremum_kernel<T, true>; });
  register_cpu_all(op_amin(), []<class T>() { return &extremum_kernel<T, false>; });
  register_cpu_all(op_max_dim(), []<class T>() { return &dim_kernel<T, true>; });
  register_cpu_all(op_min_dim(), []<class T>() { return &dim_kernel<T, false>; });
  register_cpu_numeric(op_argmax(), []<class T>() { return &arg_kernel<T, true>; });
  register_cpu_numeric(op_argmin(), []<class T>() { return &arg_kernel<T, false>; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels
