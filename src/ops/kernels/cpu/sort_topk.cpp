// sort, topk and one_hot.
// Memory contract (sort, topk): for each slice along `dim`, reads its elements once into a
// per-thread buffer, orders a permutation of them, and writes that slice of both outputs
// (values, int64 indices) once. Slices are independent: parallel across slices.
// NaN compares above every number (torch's order). Ties keep index order (stable), so results
// are fully determined by the input.
// one_hot: zero-fills the output, then writes a 1 per input element (after its range check).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "athanor/ops/indexing.h"
#include "index_util.h"
#include "register.h"

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

// Runs fn(values, perm, out_offset, out_stride) for every slice along dim, where values holds
// the slice (compute type) and perm is 0..n-1 to be ordered by fn.
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
    std::vector<C> values(static_cast<std::size_t>(n));
    std::vector<int64_t> perm(static_cast<std::size_t>(n));
    for_each_index(rest, b, e, [&](int64_t, const Index& i) {
      const T* xb = xp + offset_of(i, gx.strides, dim);
      for (int64_t j = 0; j < n; ++j) {
        values[static_cast<std::size_t>(j)] = static_cast<C>(xb[j * gx.strides[dim]]);
      }
      std::iota(perm.begin(), perm.end(), int64_t{0});
      fn(values, perm, offset_of(i, go.strides, dim), go.strides[dim]);
    });
  });
}

template <class T>
void sort_kernel(TensorSpan in, std::span<Tensor> out, const SortAttrs& a) {
  using C = compute_t<T>;
  T* vp = static_cast<T*>(out[0].data_ptr());
  int64_t* ip = static_cast<int64_t*>(out[1].data_ptr());
  for_each_slice<T>(
      in[0], out[0], a.dim,
      [&](const std::vector<C>& v, std::vector<int64_t>& p, int64_t off, int64_t stride) {
        auto at = [&](int64_t j) { return v[static_cast<std::size_t>(j)]; };
        if (a.descending) {
          std::stable_sort(p.begin(), p.end(),
                           [&](int64_t l, int64_t r) { return less_nan_last(at(r), at(l)); });
        } else {
          std::stable_sort(p.begin(), p.end(),
                           [&](int64_t l, int64_t r) { return less_nan_last(at(l), at(r)); });
        }
        for (std::size_t j = 0; j < p.size(); ++j) {
          vp[off + static_cast<int64_t>(j) * stride] = static_cast<T>(at(p[j]));
          ip[off + static_cast<int64_t>(j) * stride] = p[j];
        }
      });
}

template <class T>
void topk_kernel(TensorSpan in, std::span<Tensor> out, const TopkAttrs& a) {
  using C = compute_t<T>;
  if (a.k == 0) return;
  T* vp = static_cast<T*>(out[0].data_ptr());
  int64_t* ip = static_cast<int64_t*>(out[1].data_ptr());
  for_each_slice<T>(
      in[0], out[0], a.dim,
      [&](const std::vector<C>& v, std::vector<int64_t>& p, int64_t off, int64_t stride) {
        auto at = [&](int64_t j) { return v[static_cast<std::size_t>(j)]; };
        // A strict total order (ties broken by index) makes partial_sort's result unique.
        auto first = [&](int64_t l, int64_t r) {
          C x = at(l), y = at(r);
          bool before = a.largest ? less_nan_last(y, x) : less_nan_last(x, y);
          bool after = a.largest ? less_nan_last(x, y) : less_nan_last(y, x);
          return before || (!after && l < r);
        };
        std::partial_sort(p.begin(), p.begin() + a.k, p.end(), first);
        for (int64_t j = 0; j < a.k; ++j) {
          vp[off + j * stride] = static_cast<T>(at(p[static_cast<std::size_t>(j)]));
          ip[off + j * stride] = p[static_cast<std::size_t>(j)];
        }
      });
}

void one_hot_kernel(TensorSpan in, std::span<Tensor> out, const OneHotAttrs& a) {
  Tensor& o = out[0];
  std::memset(o.data_ptr(), 0, o.nbytes());
  const Tensor& x = in[0];
  if (x.numel() == 0) return;
  Geometry g = geometry(x);
  const int64_t* xp = static_cast<const int64_t*>(x.data_ptr());
  int64_t* op = static_cast<int64_t*>(o.data_ptr());
  for_each_index(g.shape, 0, x.numel(), [&](int64_t k, const Index& i) {
    int64_t c = xp[offset_of(i, g.strides)];
    ATH_CHECK(c >= 0 && c < a.num_classes, IndexError,
              "class value {} is out of range for num_classes {}", c, a.num_classes);
    op[k * a.num_classes + c] = 1;
  });
}

const bool registered = [] {
  register_cpu_all(op_sort(), []<class T>() { return &sort_kernel<T>; });
  register_cpu_all(op_topk(), []<class T>() { return &topk_kernel<T>; });
  register_cpu<int64_t>(op_one_hot(), []<class T>() { return &one_hot_kernel; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels
