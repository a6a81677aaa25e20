// Indexing ops: pick, place and order elements by index tensors or masks (PyTorch semantics).
//
//   Tensor x = randn({3, 4});
//   Tensor rows = index_select(x, 0, from_vector<int64_t>({2, 0}));   // x[[2, 0]]
//   Tensor cols = from_vector<int64_t>({3, 0, 1, 1, 0, 2}, {3, 2});
//   Tensor g = gather(x, 1, cols);                 // out[i][j] = x[i][cols[i][j]]
//   Tensor idx = from_vector<int64_t>({0, 2, 0}), v = ones({3});
//   Tensor s = scatter_add(zeros({3}), 0, idx, v); // accumulates in index order: [2, 0, 1]
//   Tensor y = where(gt(x, 0), x, zeros({4}, kFloat64));   // broadcasts, promotes a and b
//   auto [values, indices] = sort(x, -1, /*descending=*/true);
//   Tensor nz = nonzero(x);                        // [n, x.dim()] int64; n read from the data
//   assert(g.size(1) == 2 && s.to_vector<float>()[0] == 2 && y.dtype() == kFloat64);
//
// Index tensors are int64 (int32 is also accepted by index_select and index_add, as in torch);
// every index is range-checked (IndexError naming the op, the index and the dim size).
// Negative indices are out of range, as in torch's index_select/gather/scatter. Masks and
// conditions are bool (torch's deprecated uint8 masks are refused with a DTypeError).
//
// Determinism: scatter, scatter_add and index_add apply duplicate indices in index order (the
// last write wins for scatter), parallelizing only across outputs no two indices can share, so
// results are bitwise identical whatever the thread count.
//
// Data-dependent shapes: nonzero and masked_select size their output in the shape rule by
// reading the (CPU) input data; a tracer that replays them must re-run the shape rule.
#pragma once

#include <utility>

#include "athanor/ops/op.h"

namespace ath {

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
// out = self with source's slices added at index along dim: out[.., index[i], ..] += alpha *
// source[.., i, ..].
Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                 const Scalar& alpha = 1);

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
// out = self; out[.., index[i][j], ..] = src[i][j] along dim (last write wins on duplicates).
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value);
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);

// The result has the broadcast shape of x and mask and x's dtype; value is converted to it.
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value);
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Tensor& value);  // 0-dim value
// The elements of x (broadcast with mask) where mask is true, as a 1-D tensor.
Tensor masked_select(const Tensor& x, const Tensor& mask);
// out = self (broadcast with mask) with the masked positions filled, in order, from source.
Tensor masked_scatter(const Tensor& self, const Tensor& mask, const Tensor& source);

// cond ? a : b elementwise, broadcasting all three; a and b promote like a binary op.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b);
Tensor where(const Tensor& cond, const Scalar& a, const Tensor& b);
Tensor where(const Tensor& cond, const Scalar& a, const Scalar& b);

// Indices of the nonzero elements: int64 [n, x.dim()] in row-major order.
Tensor nonzero(const Tensor& x);

// Sorts along dim; NaN sorts above every number (last ascending, first descending). The sort is
// always stable, so `stable` is accepted for API parity only.
std::pair<Tensor, Tensor> sort(const Tensor& x, int64_t dim = -1, bool descending = false,
                               bool stable = false);
Tensor argsort(const Tensor& x, int64_t dim = -1, bool descending = false, bool stable = false);
// The k largest (or smallest) along dim, as (values, indices). Results always come sorted
// (ties keep index order), which torch's sorted=false also allows.
std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true,
                               bool sorted = true);

// int64 x of class indices -> int64 x.shape + [num_classes]; -1 uses max(x) + 1.
Tensor one_hot(const Tensor& x, int64_t num_classes = -1);

// ---- ops ------------------------------------------------------------------------------------

struct DimAttrs {
  int64_t dim = 0;  // normalized
  bool operator==(const DimAttrs&) const = default;
};
struct IndexAddAttrs {
  int64_t dim = 0;  // normalized
  Scalar alpha = 1;
  bool operator==(const IndexAddAttrs&) const = default;
};
struct ScatterValueAttrs {
  int64_t dim = 0;  // normalized
  Scalar value = 0;
  bool operator==(const ScatterValueAttrs&) const = default;
};
struct SortAttrs {
  int64_t dim = 0;  // normalized
  bool descending = false;
  bool operator==(const SortAttrs&) const = default;
};
struct TopkAttrs {
  int64_t k = 0;
  int64_t dim = 0;  // normalized
  bool largest = true;
  bool operator==(const TopkAttrs&) const = default;
};
struct OneHotAttrs {
  int64_t num_classes = 0;  // resolved (never -1)
  bool operator==(const OneHotAttrs&) const = default;
};

const Op<DimAttrs>& op_index_select();            // (x, index)
const Op<IndexAddAttrs>& op_index_add();          // (self, index, source)
const Op<DimAttrs>& op_gather();                  // (x, index)
const Op<DimAttrs>& op_scatter();                 // (self, index, src)
const Op<ScatterValueAttrs>& op_scatter_value();  // (self, index)
const Op<DimAttrs>& op_scatter_add();             // (self, index, src)
const Op<NoAttrs>& op_masked_fill();              // (x, mask, 0-dim value)
const Op<NoAttrs>& op_masked_select();            // (x, mask)
const Op<NoAttrs>& op_masked_scatter();           // (self, mask, source)
const Op<NoAttrs>& op_where();                    // (cond, a, b)
const Op<NoAttrs>& op_nonzero();                  // (x)
const Op<SortAttrs>& op_sort();                   // (x) -> (values, indices)
const Op<TopkAttrs>& op_topk();                   // (x) -> (values, indices)
const Op<OneHotAttrs>& op_one_hot();              // (x)

}  // namespace ath
