// The one batched matrix product behind mm, bmm, matmul, addmm and linear:
//
//   c[i] = alpha * a[i] @ b[i] + beta * bias      for every batch index i of c
//   (then max(c, 0) with `relu`: the epilogue of the compiler's fused linear_relu)
//
// a is [..., M, K], b [..., K, N], c [batch..., M, N] (contiguous, allocated by the caller);
// a's and b's batch dims are right-aligned against c's and broadcast (size 1 or stride 0);
// bias (optional) broadcasts to c. Operands may have any strides: a transposed view (x.t()) is
// read in place. Memory contract: reads a, b, bias; writes every element of c once; c must not
// alias an input.
#pragma once

#include "athanor/tensor/tensor.h"

namespace ath::kernels {

struct GemmArgs {
  Tensor a, b;
  Tensor c;
  Tensor bias;  // undefined: none
  double alpha = 1, beta = 1;
  bool relu = false;  // a ReLU epilogue (oneDNN's eltwise post-op)
};

// Dispatches on c's dtype: float32 (and bfloat16 where oneDNN has kernels for it) to oneDNN,
// float64 to the blocked kernel, float16 (and bfloat16 elsewhere) through float32.
void gemm(const GemmArgs& g);

// The oneDNN path (float32, bfloat16).
void gemm_dnnl(const GemmArgs& g);
// The portable path: blocked loops, accumulating in double for double and float otherwise.
void gemm_blocked(const GemmArgs& g);

// Broadcast strides of t against `shape` (right-aligned; 0 where t is broadcast or missing).
Strides gemm_broadcast_strides(const Tensor& t, const Shape& shape);

}  // namespace ath::kernels
