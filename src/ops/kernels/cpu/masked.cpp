// where, masked_fill, masked_select, masked_scatter, nonzero.
// Memory contract:
//   where, masked_fill: pointwise (broadcast reads, each output written once; parallel).
//   masked_select: reads x and mask (broadcast) once each, writes the selected values in
//     row-major order. Serial: the output position of an element depends on all before it.
//   masked_scatter: writes out = self (broadcast copy), then overwrites the masked positions in
//     row-major order with consecutive source elements (serial, same reason).
//   nonzero: reads x once, writes one row of indices per nonzero element, serially.
#include "athanor/ops/indexing.h"
#include "common/index_util.h"
#include "common/pointwise_loop.h"
#include "common/register.h"

namespace ath::kernels {
namespace {

template <class T>
bool is_nonzero(T v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return static_cast<float>(v) != 0.0f;
  } else {
    return v != T(0);
  }
}

// t's strides broadcast to `shape`, with a 0-dim `shape` seen as [1].
Strides broadcast_geometry(const Tensor& t, const Shape& shape) {
  if (shape.empty()) return Strides{0};
  return broadcast_strides(t, shape);
}

template <class T>
void where_kernel(TensorSpan in, std::span<Tensor> out, const NoAttrs&) {
  using C = compute_t<T>;
  pointwise_loop<T, bool, T, T>(out[0], {&in[0], &in[1], &in[2]},
                                [](bool c, C a, C b) { return c ? a : b; });
}

template <class T>
void masked_fill_kernel(TensorSpan in, std::span<Tensor> out, const NoAttrs&) {
  using C = compute_t<T>;
  const C v = static_cast<C>(*static_cast<const T*>(in[2].data_ptr()));
  pointwise_loop<T, T, bool>(out[0], {&in[0], &in[1]}, [v](C x, bool m) { return m ? v : x; });
}

template <class T>
void masked_select_kernel(TensorSpan in, std::span<Tensor> out, const NoAttrs&) {
  const Tensor &x = in[0], &mask = in[1];
  const Shape bs = broadcast_shapes(x.shape(), mask.shape());
  const int64_t n = numel(bs);
  if (n == 0) return;
  Shape walk = bs.empty() ? Shape{1} : bs;
  Strides xs = broadcast_geometry(x, bs), ms = broadcast_geometry(mask, bs);
  const T* xp = static_cast<const T*>(x.data_ptr());
  const bool* mp = static_cast<const bool*>(mask.data_ptr());
  T* op = static_cast<T*>(out[0].data_ptr());
  const int64_t capacity = out[0].numel();
  int64_t w = 0;
  for_each_index(walk, 0, n, [&](int64_t, const Index& i) {
    if (!mp[offset_of(i, ms)]) return;
    // The shape rule counted the mask; a mask changed since (another thread) must not overflow.
    ATH_CHECK(w < capacity, ValueError, "the mask changed while being read");
    op[w++] = xp[offset_of(i, xs)];
  });
}

template <class T>
void masked_scatter_kernel(TensorSpan in, std::span<Tensor> out, const NoAttrs&) {
  Tensor& o = out[0];
  pointwise_loop<T, T>(o, {&in[0]}, [](compute_t<T> v) { return v; });
  const Tensor &mask = in[1], &src = in[2];
  const int64_t n = o.numel();
  if (n == 0) return;
  Shape walk = o.dim() == 0 ? Shape{1} : o.shape();
  Strides ms = broadcast_geometry(mask, o.shape());
  Geometry gs = geometry(src);
  const bool* mp = static_cast<const bool*>(mask.data_ptr());
  const T* sp = static_cast<const T*>(src.data_ptr());
  T* op = static_cast<T*>(o.data_ptr());
  const int64_t n_src = src.numel();
  int64_t r = 0;
  for_each_index(walk, 0, n, [&](int64_t k, const Index& i) {
    if (!mp[offset_of(i, ms)]) return;
    ATH_CHECK(r < n_src, ValueError, "source has {} elements, fewer than the mask's true elements",
              n_src);
    // Source element r in row-major order.
    int64_t off = 0, rem = r++;
    for (std::size_t d = gs.shape.size(); d-- > 0;) {
      off += (rem % gs.shape[d]) * gs.strides[d];
      rem /= gs.shape[d];
    }
    op[k] = sp[off];
  });
}

template <class T>
void nonzero_kernel(TensorSpan in, std::span<Tensor> out, const NoAttrs&) {
  const Tensor& x = in[0];
  const int64_t n = x.numel(), nd = x.dim();
  const int64_t rows = out[0].shape()[0];
  if (n == 0 || rows == 0) return;
  Geometry g = geometry(x);
  const T* xp = static_cast<const T*>(x.data_ptr());
  int64_t* op = static_cast<int64_t*>(out[0].data_ptr());
  int64_t w = 0;
  for_each_index(g.shape, 0, n, [&](int64_t, const Index& i) {
    if (!is_nonzero(xp[offset_of(i, g.strides)])) return;
    ATH_CHECK(w < rows, ValueError, "the input changed while being read");
    for (int64_t d = 0; d < nd; ++d) op[w * nd + d] = i[d];
    ++w;
  });
}

const bool registered = [] {
  register_cpu_all(op_where(), []<class T>() { return &where_kernel<T>; });
  register_cpu_all(op_masked_fill(), []<class T>() { return &masked_fill_kernel<T>; });
  register_cpu_all(op_masked_select(), []<class T>() { return &masked_select_kernel<T>; });
  register_cpu_all(op_masked_scatter(), []<class T>() { return &masked_scatter_kernel<T>; });
  register_cpu_all(op_nonzero(), []<class T>() { return &nonzero_kernel<T>; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels
