// CPU kernels for mm, bmm, matmul, addmm and linear: each maps its operands onto gemm()
// (gemm.h), which runs oneDNN for float32/bfloat16 and the blocked kernel for float64.
// Memory contract: reads the inputs in place (any strides), writes the contiguous output once.
#include "athanor/ops/linalg.h"

#include "athanor/ops/epilogue.h"
#include "athanor/ops/views.h"
#include "common/gemm.h"
#include "common/register.h"

namespace ath::kernels {

namespace {

void product_kernel(TensorSpan in, std::span<Tensor> out, const NoAttrs&) {
  gemm({.a = in[0], .b = in[1], .c = out[0]});
}

void addmm_kernel(TensorSpan in, std::span<Tensor> out, const AddmmAttrs& at) {
  gemm({.a = in[1], .b = in[2], .c = out[0], .bias = in[0], .alpha = at.alpha, .beta = at.beta});
}

// x [..., in] as rows [R, in] (a view when its strides allow, else a copy), weight [out, in]
// read transposed in place, the output viewed as [R, out], bias [out] fused.
void linear_into(TensorSpan in, std::span<Tensor> out, bool relu) {
  const Tensor &x = in[0], &w = in[1];
  const int64_t k = w.shape()[1], n = w.shape()[0];
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < x.dim(); ++d) rows *= x.shape()[d];
  Tensor x2;
  if (auto s = view_strides(x.shape(), x.strides(), Shape{rows, k})) {
    x2 = make_view(x, Shape{rows, k}, *s, x.storage_offset());
  } else {
    x2 = make_view(x.contiguous(), Shape{rows, k}, Strides{k, 1}, 0);
  }
  Tensor wt =
      make_view(w, Shape{k, n}, Strides{w.strides()[1], w.strides()[0]}, w.storage_offset());
  Tensor c = make_view(out[0], Shape{rows, n}, Strides{n, 1}, out[0].storage_offset());
  gemm({.a = x2, .b = wt, .c = c, .bias = in.size() == 3 ? in[2] : Tensor(), .relu = relu});
}

void linear_kernel(TensorSpan in, std::span<Tensor> out, const NoAttrs&) {
  linear_into(in, out, false);
}
void linear_relu_kernel(TensorSpan in, std::span<Tensor> out, const NoAttrs&) {
  linear_into(in, out, true);
}

const bool registered = [] {
  auto product = []<class T>() { return &product_kernel; };
  register_cpu<float, double, BFloat16, Half>(op_mm(), product);
  register_cpu<float, double, BFloat16, Half>(op_bmm(), product);
  register_cpu<float, double, BFloat16, Half>(op_matmul(), product);
  register_cpu<float, double, BFloat16, Half>(op_addmm(), []<class T>() { return &addmm_kernel; });
  register_cpu<float, double, BFloat16, Half>(op_linear(),
                                              []<class T>() { return &linear_kernel; });
  register_cpu<float, double, BFloat16, Half>(op_linear_relu(),
                                              []<class T>() { return &linear_relu_kernel; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels
