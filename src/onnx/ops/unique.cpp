// Unique over the flattened input (no axis): a stable sort, the first element of each run of
// equal values, run lengths as counts, and the inverse indices scattered back through the sort
// order; sorted=0 reorders the groups by first occurrence. Registry ops only; the output's
// length depends on the values, so the trace fails and the key runs eagerly.
#include "../op_table.h"
#include "athanor/graph/tracer.h"
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

void lower_unique(NodeContext& c) {
  if (c.has_attr("axis")) c.unsupported("Unique along an axis");
  graph::Tracer::fail_active("Unique's output length depends on its input's values");
  const Tensor flat = reshape(c.in(0), {-1});
  const int64_t n = flat.numel();
  auto [vals, order] = sort(flat, 0, false, true);
  Tensor starts = ones({1}, DType::Bool);
  if (n > 1) starts = cat({starts, ne(slice(vals, 0, 1, n), slice(vals, 0, 0, n - 1))}, 0);
  if (n == 0) starts = zeros({0}, DType::Bool);
  Tensor pos = reshape(nonzero(starts), {-1});  // start of each group in sorted order
  const int64_t groups = pos.numel();
  Tensor y = index_select(vals, 0, pos);
  Tensor first = index_select(order, 0, pos);  // stable sort: the first occurrence
  Tensor ends = cat({slice(pos, 0, 1, groups), full({1}, n, kInt64)}, 0);
  Tensor counts = sub(ends, pos);
  Tensor group_of_sorted = sub(cumsum(to_dtype(starts, kInt64), 0), Scalar(1));
  if (c.attr_int("sorted", 1) == 0) {
    // Groups in order of first occurrence: permute them, and renumber the group ids.
    Tensor by_first = argsort(first, 0, false, true);
    y = index_select(y, 0, by_first);
    first = index_select(first, 0, by_first);
    counts = index_select(counts, 0, by_first);
    Tensor rank = scatter(zeros({groups}, kInt64), 0, by_first, arange(Scalar(groups)));
    group_of_sorted = index_select(rank, 0, group_of_sorted);
  }
  Tensor inverse = scatter(zeros({n}, kInt64), 0, order, group_of_sorted);
  c.out(0, y);
  if (c.wants(1)) c.out(1, first);
  if (c.wants(2)) c.out(2, inverse);
  if (c.wants(3)) c.out(3, counts);
}

}  // namespace

void add_unique_ops(OpTable& t) { t["Unique"] = {lower_unique, 0, 11, kNumericTypes}; }

}  // namespace ath::onnx::detail
