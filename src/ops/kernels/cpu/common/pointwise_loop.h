// The CPU loop behind every pointwise kernel: out[i] = f(in0[i], in1[i], ...) with NumPy
// broadcasting, any strides, and a vectorizable fast path.
//
//   pointwise_loop<float, float, float>(out, {&a, &b}, [](float x, float y) { return x + y; });
//
// Memory contract: reads each input element once per output element that maps to it (a
// broadcast input is read, never materialized); writes every element of `out` exactly once; `out`
// may alias an input only element-for-element (same shape and strides: the in-place ops).
//
// How it runs: operands' strides are broadcast to out's shape and adjacent dims that are
// contiguous for every operand are merged. The flat range is split across threads
// (parallel_for); each piece walks inner rows, and a row whose operands all have stride 1 or 0
// (the common case) runs a loop the compiler vectorizes for the ISA this file was built for.
#pragma once

#include <array>
#include <cstdint>
#include <utility>

#include "athanor/core/parallel.h"
#include "athanor/tensor/tensor.h"

namespace ath::kernels {

template <std::size_t N>
struct LoopLayout {
  int ndim = 0;
  std::array<int64_t, kMaxDims> sizes{};
  std::array<std::array<int64_t, kMaxDims>, N + 1> strides{};  // [0] = out, in elements
};

// Broadcast strides of `t` against `shape` (0 where t's dim is broadcast).
inline Strides broadcast_strides(const Tensor& t, const Shape& shape) {
  Strides s(shape.size(), 0);
  std::size_t off = shape.size() - static_cast<std::size_t>(t.dim());
  for (std::size_t d = 0; d < static_cast<std::size_t>(t.dim()); ++d) {
    s[off + d] = t.shape()[d] == 1 ? 0 : t.strides()[d];
  }
  return s;
}

template <std::size_t N>
LoopLayout<N> make_layout(const Tensor& out, const std::array<const Tensor*, N>& ins) {
  const Shape& shape = out.shape();
  std::array<Strides, N + 1> st;
  st[0] = out.strides();
  for (std::size_t i = 0; i < N; ++i) st[i + 1] = broadcast_strides(*ins[i], shape);
  LoopLayout<N> l;
  // Merge dims from the innermost outwards; drop size-1 dims.
  for (std::size_t d = shape.size(); d-- > 0;) {
    if (shape[d] == 1) continue;
    bool merge = l.ndim > 0;
    for (std::size_t k = 0; merge && k <= N; ++k) {
      merge = st[k][d] == l.strides[k][l.ndim - 1] * l.sizes[l.ndim - 1];
    }
    if (merge) {
      l.sizes[l.ndim - 1] *= shape[d];
    } else {
      l.sizes[l.ndim] = shape[d];
      for (std::size_t k = 0; k <= N; ++k) l.strides[k][l.ndim] = st[k][d];
      ++l.ndim;
    }
  }
  if (l.ndim == 0) {  // a single element
    l.ndim = 1;
    l.sizes[0] = 1;
    for (std::size_t k = 0; k <= N; ++k) l.strides[k][0] = 1;
  }
  // l is innermost-first: l.sizes[0] is the row length.
  return l;
}

template <class T>
inline compute_t<T> load(const T* p) {
  return static_cast<compute_t<T>>(*p);
}

// A row: n elements; Unit bit k set means operand k+1 has stride 1, Zero bit k set stride 0.
template <class Out, class... In, class F, std::size_t... I>
inline void row_contiguous(int64_t n, Out* out, const std::tuple<const In*...>& in, F& f,
                           std::index_sequence<I...>) {
  for (int64_t j = 0; j < n; ++j) out[j] = static_cast<Out>(f(load(std::get<I>(in) + j)...));
}

template <unsigned ScalarMask, class Out, class... In, class F, std::size_t... I>
inline void row_mixed(int64_t n, Out* out, const std::tuple<const In*...>& in, F& f,
                      std::index_sequence<I...>) {
  // Operands with stride 0 are loaded once, outside the loop, so the loop body vectorizes.
  [[maybe_unused]] auto scalars = std::make_tuple(load(std::get<I>(in))...);
  for (int64_t j = 0; j < n; ++j) {
    out[j] = static_cast<Out>(
        f(((ScalarMask >> I) & 1u ? std::get<I>(scalars) : load(std::get<I>(in) + j))...));
  }
}

template <class Out, class... In, class F, std::size_t... I>
inline void row_strided(int64_t n, Out* out, int64_t so, const std::tuple<const In*...>& in,
                        const std::array<int64_t, sizeof...(In)>& si, F& f,
                        std::index_sequence<I...>) {
  for (int64_t j = 0; j < n; ++j) {
    out[j * so] = static_cast<Out>(f(load(std::get<I>(in) + j * si[I])...));
  }
}

template <class Out, class... In, class F, unsigned... Masks>
inline bool dispatch_mixed(unsigned mask, int64_t n, Out* out, const std::tuple<const In*...>& in,
                           F& f, std::integer_sequence<unsigned, Masks...>) {
  using Seq = std::index_sequence_for<In...>;
  return ((mask == Masks ? (row_mixed<Masks, Out, In...>(n, out, in, f, Seq{}), true) : false) ||
          ...);
}

template <class Out, class... In, class F>
inline void run_row(int64_t n, Out* out, int64_t so, const std::tuple<const In*...>& in,
                    const std::array<int64_t, sizeof...(In)>& si, F& f) {
  constexpr std::size_t N = sizeof...(In);
  using Seq = std::index_sequence_for<In...>;
  unsigned zero_mask = 0;
  bool unit_or_zero = so == 1;
  for (std::size_t k = 0; k < N; ++k) {
    if (si[k] == 0)
      zero_mask |= 1u << k;
    else if (si[k] != 1)
      unit_or_zero = false;
  }
  if (unit_or_zero) {
    if (zero_mask == 0) return row_contiguous<Out, In...>(n, out, in, f, Seq{});
    if (dispatch_mixed<Out, In...>(zero_mask, n, out, in, f,
                                   std::make_integer_sequence<unsigned, (1u << N)>{})) {
      return;
    }
  }
  row_strided<Out, In...>(n, out, so, in, si, f, Seq{});
}

// out = f(ins...) elementwise. Out and In... are the storage types; f takes and returns
// compute types (float for the 16-bit floats).
template <class Out, class... In, class F>
void pointwise_loop(Tensor& out, const std::array<const Tensor*, sizeof...(In)>& ins, F f,
                    int64_t grain = kPointwiseGrain) {
  constexpr std::size_t N = sizeof...(In);
  const int64_t total = out.numel();
  if (total == 0) return;
  Out* out_base = static_cast<Out*>(out.data_ptr());
  std::array<const void*, N> in_base{};
  for (std::size_t k = 0; k < N; ++k) in_base[k] = ins[k]->data_ptr();
  // Fast path: every operand contiguous with out's element count (same shape, no broadcast).
  bool flat = out.is_contiguous();
  for (std::size_t k = 0; k < N && flat; ++k) {
    flat = ins[k]->is_contiguous() && ins[k]->numel() == total;
  }
  if (flat) {
    parallel_for(0, total, grain, [&](int64_t begin, int64_t end) {
      auto ptrs = [&]<std::size_t... I>(std::index_sequence<I...>) {
        return std::make_tuple(static_cast<const In*>(in_base[I]) + begin...);
      }
      (std::index_sequence_for<In...>{});
      row_contiguous<Out, In...>(end - begin, out_base + begin, ptrs, f,
                                 std::index_sequence_for<In...>{});
    });
    return;
  }
  LoopLayout<N> l = make_layout<N>(out, ins);
  parallel_for(0, total, grain, [&](int64_t begin, int64_t end) {
    // Position of `begin` in the (innermost-first) index space.
    std::array<int64_t, kMaxDims> idx{};
    int64_t rem = begin;
    for (int d = 0; d < l.ndim; ++d) {
      idx[d] = rem % l.sizes[d];
      rem /= l.sizes[d];
    }
    int64_t pos = begin;
    while (pos < end) {
      int64_t n = std::min(l.sizes[0] - idx[0], end - pos);
      int64_t off_out = 0;
      std::array<int64_t, N> off{};
      for (int d = 0; d < l.ndim; ++d) {
        off_out += idx[d] * l.strides[0][d];
        for (std::size_t k = 0; k < N; ++k) off[k] += idx[d] * l.strides[k + 1][d];
      }
      std::array<int64_t, N> si{};
      for (std::size_t k = 0; k < N; ++k) si[k] = l.strides[k + 1][0];
      auto ptrs = [&]<std::size_t... I>(std::index_sequence<I...>) {
        return std::make_tuple(static_cast<const In*>(in_base[I]) + off[I]...);
      }
      (std::index_sequence_for<In...>{});
      run_row<Out, In...>(n, out_base + off_out, l.strides[0][0], ptrs, si, f);
      pos += n;
      idx[0] += n;
      for (int d = 0; d < l.ndim - 1 && idx[d] >= l.sizes[d]; ++d) {
        idx[d] = 0;
        ++idx[d + 1];
      }
    }
  });
}

}  // namespace ath::kernels
