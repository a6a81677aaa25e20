// gather, scatter, scatter_value and scatter_add.
// Memory contract:
//   gather: reads index once (range-checked first) and one x element per output element; writes
//     every output element once. Parallel over output elements.
//   scatter*: write out = self (strided copy), then visit index positions and write (or add) at
//     out[.., index, ..]. Two index positions can only hit the same output when they differ in
//     `dim` alone, so the walk is parallel across positions outside `dim` and serial along it:
//     duplicates apply in index order (last write wins; sums in a fixed order), whatever the
//     thread count.
#include "athanor/ops/indexing.h"
#include "common/index_util.h"
#include "common/pointwise_loop.h"
#include "common/register.h"

namespace ath::kernels {
namespace {

template <class T>
void gather_kernel(TensorSpan in, std::span<Tensor> out, const DimAttrs& a) {
  const Tensor& x = in[0];
  Tensor& o = out[0];
  Geometry gx = geometry(x);
  std::vector<int64_t> idx = read_indices(in[1], gx.shape[a.dim], a.dim);
  if (o.numel() == 0) return;
  Shape os = geometry(o).shape;  // == index's shape
  const T* xp = static_cast<const T*>(x.data_ptr());
  T* op = static_cast<T*>(o.data_ptr());
  const int64_t xs_dim = gx.strides[a.dim];
  parallel_for(0, o.numel(), kPointwiseGrain / 4, [&](int64_t b, int64_t e) {
    for_each_index(os, b, e, [&](int64_t k, const Index& i) {
      op[k] = xp[offset_of(i, gx.strides, a.dim) + idx[static_cast<std::size_t>(k)] * xs_dim];
    });
  });
}

enum class Mode { Assign, Add, Value };

template <class T, Mode M>
void scatter_impl(TensorSpan in, Tensor& o, int64_t dim, compute_t<T> value) {
  pointwise_loop<T, T>(o, {&in[0]}, [](compute_t<T> v) { return v; });
  Geometry go = geometry(o);
  std::vector<int64_t> idx = read_indices(in[1], go.shape[dim], dim);
  if (idx.empty()) return;
  using C = compute_t<T>;
  Shape is = geometry(in[1]).shape;
  Strides istr = contiguous_strides(is);  // idx is row-major over index's shape
  Geometry gs = M == Mode::Value ? Geometry{} : geometry(in[2]);
  const T* sp = M == Mode::Value ? nullptr : static_cast<const T*>(in[2].data_ptr());
  T* op = static_cast<T*>(o.data_ptr());
  Shape rest = is;
  rest[dim] = 1;
  const int64_t n_dim = is[dim], os_dim = go.strides[dim], is_dim = istr[dim];
  const int64_t ss_dim = M == Mode::Value ? 0 : gs.strides[dim];
  const Strides& src_strides = M == Mode::Value ? istr : gs.strides;
  for_each_rest_block<3>(
      rest, dim, {go.strides, istr, src_strides}, n_dim, [&](int64_t count, const auto& base) {
        for (int64_t j = 0; j < n_dim; ++j) {
          for (int64_t r = 0; r < count; ++r) {
            auto ru = static_cast<std::size_t>(r);
            int64_t target = idx[static_cast<std::size_t>(base[1][ru] + j * is_dim)];
            T& dst = op[base[0][ru] + target * os_dim];
            if constexpr (M == Mode::Value) {
              dst = static_cast<T>(value);
            } else {
              const T s = sp[base[2][ru] + j * ss_dim];
              if constexpr (M == Mode::Assign) {
                dst = s;
              } else {
                dst = static_cast<T>(static_cast<C>(dst) + static_cast<C>(s));
              }
            }
          }
        }
      });
}

template <class T>
void scatter_kernel(TensorSpan in, std::span<Tensor> out, const DimAttrs& a) {
  scatter_impl<T, Mode::Assign>(in, out[0], a.dim, {});
}
template <class T>
void scatter_add_kernel(TensorSpan in, std::span<Tensor> out, const DimAttrs& a) {
  scatter_impl<T, Mode::Add>(in, out[0], a.dim, {});
}
template <class T>
void scatter_value_kernel(TensorSpan in, std::span<Tensor> out, const ScatterValueAttrs& a) {
  scatter_impl<T, Mode::Value>(in, out[0], a.dim, static_cast<compute_t<T>>(a.value.to<T>()));
}

const bool registered = [] {
  register_cpu_all(op_gather(), []<class T>() { return &gather_kernel<T>; });
  register_cpu_all(op_scatter(), []<class T>() { return &scatter_kernel<T>; });
  register_cpu_all(op_scatter_value(), []<class T>() { return &scatter_value_kernel<T>; });
  register_cpu_numeric(op_scatter_add(), []<class T>() { return &scatter_add_kernel<T>; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels
