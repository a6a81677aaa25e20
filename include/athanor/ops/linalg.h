// Matrix products: mm, bmm, matmul (NumPy-broadcast batches), addmm and linear.
//
//   Tensor a = randn({2, 3}), b = randn({3, 4}), x = randn({5, 3}), w = randn({4, 3});
//   Tensor c = mm(a, b);                       // [M, K] @ [K, N]
//   Tensor d = matmul(x, w.t());               // transposed views are read in place, no copy
//   Tensor e = matmul(randn({8, 1, 4, 5}), randn({3, 5, 6}));   // -> [8, 3, 4, 6]
//   Tensor bias = randn({4});
//   Tensor y = linear(x, w, bias);             // x [..., in], weight [out, in], bias [out]
//   Tensor z = addmm(bias, a, b, /*beta=*/0.5, /*alpha=*/2);    // 0.5 * bias + 2 * a @ b
//   assert(c.size(1) == 4 && d.size(1) == 4 && e.size(1) == 3 && y.size(0) == 5);
//
// float32 and bfloat16 run on oneDNN (bfloat16 accumulates in float32 and rounds the result,
// like PyTorch); float64 runs a blocked C++ kernel; float16 computes in float32. Built oneDNN
// primitives are cached by shape, stride, dtype and attributes (see onednn_cache_stats), so
// repeated calls with the same shapes skip the build.
#pragma once

#include <optional>

#include "athanor/ops/op.h"

namespace ath {

Tensor mm(const Tensor& a, const Tensor& b);   // 2-D x 2-D
Tensor bmm(const Tensor& a, const Tensor& b);  // [B, M, K] x [B, K, N]
// torch.matmul: 1-D x 1-D is a dot product (0-dim), 2-D x 1-D a matrix-vector product,
// 1-D x 2-D a vector-matrix product; with more dims, batch dims broadcast.
Tensor matmul(const Tensor& a, const Tensor& b);
// beta * bias + alpha * (a @ b); bias broadcasts to [M, N]. With beta == 0 bias is ignored
// (NaN in it does not propagate), as in PyTorch.
Tensor addmm(const Tensor& bias, const Tensor& a, const Tensor& b, double beta = 1,
             double alpha = 1);
// x @ weight^T + bias over x's last dim: x [..., in], weight [out, in], bias [out].
Tensor linear(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias = {});

struct AddmmAttrs {
  double beta = 1, alpha = 1;
  bool operator==(const AddmmAttrs&) const = default;
};

const Op<NoAttrs>& op_mm();
const Op<NoAttrs>& op_bmm();
// The broadcasting batched product on operands of >= 2 dims (1-D cases are views around it).
const Op<NoAttrs>& op_matmul();
const Op<AddmmAttrs>& op_addmm();
// Inputs (x, weight) or (x, weight, bias).
const Op<NoAttrs>& op_linear();

// The primitive cache shared by every oneDNN kernel (matmul and convolution).
struct OneDnnCacheStats {
  int64_t hits = 0, misses = 0, entries = 0, capacity = 0;
};
OneDnnCacheStats onednn_cache_stats();
// Entries kept (least recently used dropped first); 0 disables caching. Default 1024.
void set_onednn_cache_capacity(std::size_t entries);

}  // namespace ath
