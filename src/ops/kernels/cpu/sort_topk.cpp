// sort and topk.
// Memory contract: for each slice along `dim`, reads its elements once into a per-thread buffer
// of (value, position) pairs, orders them, and writes that slice of both outputs (values, int64
// indices) once. Slices are independent: parallel across slices.
// NaN compares above every number (torch's order). Ties keep index order (stable), so results
// are fully determined by the input.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "athanor/ops/indexing.h"
#include "common/index_util.h"
#include "common/register.h"

namespace ath::kernels {
namespace {

template <class C>
bool is_nan(C v) {
  if constexpr (std::is_floating_point_v<C>) {
    return std::isnan(v);
  } else {
    return false;
  }
}
// a < b with NaN largest.
template <class C>
bool less_nan_last(C a, C b) {
  return (!is_nan(a) && is_nan(b)) || a < b;
}

// Runs fn(items, out_offset, out_stride) for every slice along dim, with items the slice's
// (value, position) pairs for fn to order.
template <class T, class Fn>
void for_each_slice(const Tensor& x, const Tensor& out, int64_t dim, Fn fn) {
  using C = compute_t<T>;
  Geometry gx = geometry(x), go = geometry(out);
  const int64_t n = gx.shape[dim];
  Shape rest = gx.shape;
  rest[dim] = 1;
  const int64_t n_rest = numel(rest);
  if (n_rest == 0 || n == 0) return;
  const T* xp = static_cast<const T*>(x.data_ptr());
  parallel_for(0, n_rest, std::max<int64_t>(1, 8192 / n), [&](int64_t b, int64_t e) {
    std::vector<std::pair<C, int64_t>> items(static_cast<std::size_t>(n));
    for_each_index(rest, b, e, [&](int64_t, const Index& i) {
      const T* xb = xp + offset_of(i, gx.strides, dim);
      for (int64_t j = 0; j < n; ++j) {
        items[static_cast<std::size_t>(j)] = {static_cast<C>(xb[j * gx.strides[dim]]), j};
      }
      fn(items, offset_of(i, go.strides, dim), go.strides[dim]);
    });
  });
}

template <class T, class Item>
void write_items(const std::vector<Item>& items, int64_t count, T* vp, int64_t* ip, int64_t off,
                 int64_t stride) {
  for (int64_t j = 0; j < count; ++j) {
    const Item& it = items[static_cast<std::size_t>(j)];
    vp[off + j * stride] = static_cast<T>(it.first);
    ip[off + j * stride] = it.second;
  }
}

template <class T>
void sort_kernel(TensorSpan in, std::span<Tensor> out, const SortAttrs& a) {
  using Item = std::pair<compute_t<T>, int64_t>;
  T* vp = static_cast<T*>(out[0].data_ptr());
  int64_t* ip = static_cast<int64_t*>(out[1].data_ptr());
  for_each_slice<T>(in[0], out[0], a.dim, [&](std::vector<Item>& items, int64_t off, int64_t st) {
    if (a.descending) {
      std::stable_sort(items.begin(), items.end(), [](const Item& l, const Item& r) {
        return less_nan_last(r.first, l.first);
      });
    } else {
      std::stable_sort(items.begin(), items.end(), [](const Item& l, const Item& r) {
        return less_nan_last(l.first, r.first);
      });
    }
    write_items(items, static_cast<int64_t>(items.size()), vp, ip, off, st);
  });
}

template <class T>
void topk_kernel(TensorSpan in, std::span<Tensor> out, const TopkAttrs& a) {
  using Item = std::pair<compute_t<T>, int64_t>;
  if (a.k == 0) return;
  T* vp = static_cast<T*>(out[0].data_ptr());
  int64_t* ip = static_cast<int64_t*>(out[1].data_ptr());
  const bool largest = a.largest;
  // A strict total order (ties broken by position) makes partial_sort's result unique.
  auto first = [largest](const Item& l, const Item& r) {
    bool before = largest ? less_nan_last(r.first, l.first) : less_nan_last(l.first, r.first);
    bool after = largest ? less_nan_last(l.first, r.first) : less_nan_last(r.first, l.first);
    return before || (!after && l.second < r.second);
  };
  for_each_slice<T>(in[0], out[0], a.dim, [&](std::vector<Item>& items, int64_t off, int64_t st) {
    std::partial_sort(items.begin(), items.begin() + a.k, items.end(), first);
    write_items(items, a.k, vp, ip, off, st);
  });
}

const bool registered = [] {
  register_cpu_all(op_sort(), []<class T>() { return &sort_kernel<T>; });
  register_cpu_all(op_topk(), []<class T>() { return &topk_kernel<T>; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels
