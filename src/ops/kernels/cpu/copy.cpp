// CPU kernels for the copy ops: one strided, broadcasting, converting loop serves all three.
#include "athanor/ops/copy.h"

#include "pointwise_loop.h"
#include "register.h"

namespace ath::kernels {
namespace {

template <class Src, class Dst>
Dst convert(compute_t<Src> v) {
  if constexpr (std::is_same_v<Dst, bool>) {
    return v != compute_t<Src>(0);
  } else if constexpr (std::is_same_v<Dst, Half> || std::is_same_v<Dst, BFloat16>) {
    return Dst(static_cast<float>(v));
  } else {
    return static_cast<Dst>(v);
  }
}

// Copies src into out (out's shape; src broadcast), converting Src -> out's dtype.
template <class Src>
void convert_into(Tensor& out, const Tensor& src) {
  dispatch_dtype(out.dtype(), [&]<class Dst>() {
    pointwise_loop<Dst, Src>(out, {&src},
                             [](compute_t<Src> v) { return compute_t<Dst>(convert<Src, Dst>(v)); });
  });
}

template <class Src>
void to_dtype_kernel(TensorSpan in, std::span<Tensor> out, const ToDTypeAttrs&) {
  convert_into<Src>(out[0], in[0]);
}
template <class Src>
void clone_kernel(TensorSpan in, std::span<Tensor> out, const NoAttrs&) {
  convert_into<Src>(out[0], in[0]);
}
template <class Src>
void copy_kernel(TensorSpan in, std::span<Tensor> out, const NoAttrs&) {
  convert_into<Src>(out[0], in[1]);
}

const bool registered = [] {
  register_cpu_all(op_to_dtype(), []<class T>() { return &to_dtype_kernel<T>; });
  register_cpu_all(op_clone(), []<class T>() { return &clone_kernel<T>; });
  register_cpu_all(op_copy(), []<class T>() { return &copy_kernel<T>; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels
