// cat, tril, triu, flip.
// Memory contract:
//   cat: each (already promoted) input is read once and copied into its slab of the output;
//     every output element is written once.
//   tril/triu: reads the kept elements, writes every output element once (zeros elsewhere).
//   flip: reads each input element once through a view with negated strides, writes every
//     output element once.
// All run through pointwise-style loops, parallel over output elements.
#include "athanor/ops/shaping.h"

#include "common/index_util.h"
#include "common/pointwise_loop.h"
#include "common/register.h"

namespace ath::kernels {
namespace {

template <class T>
void copy_into(Tensor& dst, const Tensor& src) {
  pointwise_loop<T, T>(dst, {&src}, [](compute_t<T> v) { return v; });
}

template <class T>
void cat_kernel(TensorSpan in, std::span<Tensor> out, const CatAttrs& a) {
  Tensor& o = out[0];
  if (o.numel() == 0) return;
  int64_t offset = 0;
  for (const Tensor& x : in) {
    if (x.dim() == 1 && x.shape()[0] == 0) continue;  // skipped, as the shape rule did
    int64_t len = x.shape()[a.dim];
    if (len == 0) continue;
    Tensor slab =
        make_view(o, x.shape(), o.strides(), o.storage_offset() + offset * o.strides()[a.dim]);
    copy_into<T>(slab, x);
    offset += len;
  }
}

template <class T, bool Lower>
void triangle_kernel(TensorSpan in, std::span<Tensor> out, const TriAttrs& a) {
  const Tensor& x = in[0];
  Tensor& o = out[0];
  if (o.numel() == 0) return;
  const int64_t nd = x.dim();
  const T* xp = static_cast<const T*>(x.data_ptr());
  T* op = static_cast<T*>(o.data_ptr());
  const Shape& shape = x.shape();
  const Strides& xs = x.strides();
  parallel_for(0, o.numel(), kPointwiseGrain / 4, [&](int64_t b, int64_t e) {
    for_each_index(shape, b, e, [&](int64_t k, const Index& i) {
      int64_t diff = i[nd - 1] - i[nd - 2];  // column - row
      bool keep = Lower ? diff <= a.diagonal : diff >= a.diagonal;
      op[k] = keep ? xp[offset_of(i, xs)] : T{};
    });
  });
}

template <class T>
void flip_kernel(TensorSpan in, std::span<Tensor> out, const FlipAttrs& a) {
  const Tensor& x = in[0];
  if (x.dim() == 0 || x.numel() == 0) return copy_into<T>(out[0], x);
  Strides st = x.strides();
  int64_t offset = x.storage_offset();
  for (int64_t d : a.dims) {
    offset += (x.shape()[d] - 1) * st[d];
    st[d] = -st[d];
  }
  Tensor reversed = make_view(x, x.shape(), st, offset);
  copy_into<T>(out[0], reversed);
}

const bool registered = [] {
  register_cpu_all(op_cat(), []<class T>() { return &cat_kernel<T>; });
  register_cpu_all(op_tril(), []<class T>() { return &triangle_kernel<T, true>; });
  register_cpu_all(op_triu(), []<class T>() { return &triangle_kernel<T, false>; });
  register_cpu_all(op_flip(), []<class T>() { return &flip_kernel<T>; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels
