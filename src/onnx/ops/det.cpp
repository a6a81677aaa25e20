// Det: LU factorization with partial pivoting, unrolled over the (concrete) matrix size with
// registry ops — the pivot row found with argmax and swapped in with a gather, so no value is
// read on the host and the graph records and replays. det = sign of the row swaps * product
// of the pivots.
#include "../op_table.h"
#include "athanor/ops/comparison.h"
#include "athanor/ops/copy.h"
#include "athanor/ops/creation.h"
#include "athanor/ops/indexing.h"
#include "athanor/ops/pointwise.h"
#include "athanor/ops/reduction.h"
#include "athanor/ops/shaping.h"
#include "athanor/ops/views.h"

namespace ath::onnx::detail {

namespace {

void lower_det(NodeContext& c) {
  const Tensor& x = c.in(0);
  ATH_CHECK(x.dim() >= 2 && x.size(-1) == x.size(-2), ShapeError,
            "Det needs [..., n, n], got rank {}", x.dim());
  const int64_t n = x.size(-1);
  ATH_CHECK(n <= 256, NotImplementedError, "Det of {}x{} matrices (unrolled up to 256)", n, n);
  Shape batch(x.shape().begin(), x.shape().end() - 2);
  Tensor a = to_dtype(x, kFloat64);
  Tensor det = ones(batch, kFloat64);
  Tensor rows = arange(Scalar(n));  // int64 [n]
  Shape perm_shape = batch;
  perm_shape.push_back(n);
  perm_shape.push_back(n);
  for (int64_t k = 0; k < n; ++k) {
    // The largest |a[i, k]| for i >= k: its row swaps with row k (the sign flips if they differ).
    Tensor p =
        add(argmax(abs(select(slice(a, -2, k, n), -1, k)), -1, true), Scalar(k));  // [..., 1]
    Tensor perm = where(eq(rows, Scalar(k)), p, where(eq(rows, p), full({}, k, kInt64), rows));
    a = gather(a, -2, expand(unsqueeze(perm, -1), perm_shape));
    det = mul(det, where(eq(squeeze(p, -1), Scalar(k)), full({}, 1.0, kFloat64),
                         full({}, -1.0, kFloat64)));
    Tensor pivot_row = slice(a, -2, k, k + 1);       // [..., 1, n]
    Tensor pivot = select(select(a, -2, k), -1, k);  // [...]
    det = mul(det, pivot);
    if (k + 1 == n) break;
    Tensor below = slice(a, -2, k + 1, n);  // [..., n-k-1, n]
    Tensor factor = div(slice(below, -1, k, k + 1), unsqueeze(unsqueeze(pivot, -1), -1));
    a = cat({slice(a, -2, 0, k + 1), sub(below, mul(factor, pivot_row))}, -2);
  }
  c.out(0, to_dtype(det, x.dtype()));
}

}  // namespace

void add_det_ops(OpTable& t) { t["Det"] = {lower_det, 0, 11, kFloatTypes}; }

}  // namespace ath::onnx::detail
