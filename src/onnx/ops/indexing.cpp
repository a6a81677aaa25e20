// ONNX ops that index: Gather, GatherElements, ScatterElements, TopK, ArgMax/ArgMin, CumSum,
// OneHot, NonZero. ONNX indices may be negative (counted from the end of the axis); athanor's
// kernels take them normalized, so they are wrapped first.
#include "athanor/ops/indexing.h"

#include "../op_table.h"
#include "athanor/graph/tracer.h"
#include "athanor/ops/comparison.h"
#include "athanor/ops/copy.h"
#include "athanor/ops/creation.h"
#include "athanor/ops/pointwise.h"
#include "athanor/ops/reduction.h"
#include "athanor/ops/shaping.h"
#include "athanor/ops/views.h"

namespace ath::onnx::detail {

namespace {

// index + n where index < 0, as int64.
Tensor wrap_indices(const Tensor& index, int64_t n) {
  Tensor i = to_dtype(index, kInt64);
  return where(lt(i, Scalar(0)), add(i, Scalar(n)), i);
}

void lower_gather(NodeContext& c) {
  const Tensor& x = c.in(0);
  const Tensor& idx = c.in(1);
  const int64_t axis = c.axis(c.attr_int("axis", 0), x.dim());
  Tensor flat = reshape(wrap_indices(idx, x.size(axis)), {idx.numel()});
  Tensor y = index_select(x, axis, flat);
  Shape shape(x.shape().begin(), x.shape().begin() + axis);
  for (int64_t d : idx.shape()) shape.push_back(d);
  for (int64_t d = axis + 1; d < x.dim(); ++d) shape.push_back(x.size(d));
  c.out(0, reshape(y, shape));
}

void lower_gather_elements(NodeContext& c) {
  const Tensor& x = c.in(0);
  const int64_t axis = c.axis(c.attr_int("axis", 0), x.dim());
  c.out(0, gather(x, axis, wrap_indices(c.in(1), x.size(axis))));
}

void lower_scatter_elements(NodeContext& c) {
  const Tensor& x = c.in(0);
  const int64_t axis = c.axis(c.attr_int("axis", 0), x.dim());
  const std::string reduction = c.attr_string("reduction", "none");
  Tensor idx = wrap_indices(c.in(1), x.size(axis));
  if (reduction == "none") {
    c.out(0, scatter(x, axis, idx, c.in(2)));
  } else if (reduction == "add") {
    c.out(0, scatter_add(x, axis, idx, c.in(2)));
  } else {
    c.unsupported("ScatterElements reduction '{}'", reduction);
  }
}

void lower_topk(NodeContext& c) {
  const Tensor& x = c.in(0);
  const int64_t axis = c.axis(c.attr_int("axis", -1), x.dim());
  const int64_t k = c.opset() >= 10 ? c.ints(1).at(0) : c.attr_int("k", 0);
  const bool largest = c.opset() >= 11 ? c.attr_int("largest", 1) != 0 : true;
  auto [values, indices] = topk(x, k, axis, largest, true);
  c.out(0, values);
  if (c.wants(1)) c.out(1, indices);
}

template <bool Max>
void lower_arg(NodeContext& c) {
  const Tensor& x = c.in(0);
  const int64_t axis = c.axis(c.attr_int("axis", 0), x.dim());
  const bool keep = c.attr_int("keepdims", 1) != 0;
  if (c.attr_int("select_last_index", 0) != 0) {
    // The last of equal extrema: the first in the flipped tensor, mapped back.
    Tensor r = Max ? argmax(flip(x, {axis}), axis, keep) : argmin(flip(x, {axis}), axis, keep);
    c.out(0, sub(full({}, x.size(axis) - 1, kInt64), r));
    return;
  }
  c.out(0, Max ? argmax(x, axis, keep) : argmin(x, axis, keep));
}

void lower_cumsum(NodeContext& c) {
  const Tensor& x = c.in(0);
  const int64_t axis = c.axis(c.ints(1).at(0), x.dim());
  ScanAttrs a{.dim = axis,
              .dtype = {},
              .reverse = c.attr_int("reverse", 0) != 0,
              .exclusive = c.attr_int("exclusive", 0) != 0};
  c.out(0, like_type(cumsum(x, a), x));
}

void lower_one_hot(NodeContext& c) {
  const Tensor& idx = c.in(0);
  const double depth_v = c.doubles(1).at(0);
  ATH_CHECK(depth_v >= 1 && depth_v <= static_cast<double>(int64_t{1} << 24), ValueError,
            "depth {} is out of range", depth_v);
  const auto depth = static_cast<int64_t>(depth_v);
  const Tensor& values = c.in(2);  // [off, on]
  const int64_t rank = idx.dim() + 1;
  const int64_t axis = c.axis(c.attr_int("axis", -1), rank);
  Tensor i = wrap_indices(idx, depth);
  // Out-of-range indices give an all-off row, as ONNX specifies.
  Tensor valid = logical_and(ge(i, Scalar(0)), lt(i, Scalar(depth)));
  Tensor hot = logical_and(eq(unsqueeze(i, -1), arange(Scalar(depth))), unsqueeze(valid, -1));
  if (axis != rank - 1) {
    DimList perm;
    for (int64_t d = 0; d < rank - 1; ++d) {
      if (d == axis) perm.push_back(rank - 1);
      perm.push_back(d);
    }
    if (static_cast<int64_t>(perm.size()) < rank) perm.push_back(rank - 1);
    hot = permute(hot, perm);
  }
  c.out(0, where(hot, select(values, 0, 1), select(values, 0, 0)));
}

void lower_nonzero(NodeContext& c) {
  // Its output's shape depends on the values: a replay could not reuse a recorded shape.
  graph::Tracer::fail_active("NonZero's output shape depends on its input's values");
  c.out(0, transpose(nonzero(c.in(0)), 0, 1));
}

// The row of `data` flattened over its first b + k dims that each index tuple of GatherND /
// ScatterND names: indices [B..., M..., k] -> int64 [B..., M...] (negative entries wrapped).
Tensor nd_linear_index(const Tensor& data, const Tensor& indices, int64_t b) {
  const int64_t k = indices.size(-1);
  ATH_CHECK(k >= 1 && b + k <= data.dim(), ShapeError,
            "index tuples of length {} after {} batch dims for data of rank {}", k, b, data.dim());
  std::vector<int64_t> dims, strides(static_cast<std::size_t>(k));
  int64_t stride = 1;
  for (int64_t j = k - 1; j >= 0; --j) {
    strides[static_cast<std::size_t>(j)] = stride;
    stride *= data.size(b + j);
  }
  for (int64_t j = 0; j < k; ++j) dims.push_back(data.size(b + j));
  Tensor i = to_dtype(indices, kInt64);
  i = where(lt(i, Scalar(0)), add(i, from_vector(dims)), i);
  Tensor linear = sum(mul(i, from_vector(strides)), {-1});
  if (b > 0) {
    int64_t batches = 1;
    Shape bshape;
    for (int64_t d = 0; d < b; ++d) {
      batches *= data.size(d);
      bshape.push_back(data.size(d));
    }
    while (static_cast<int64_t>(bshape.size()) < linear.dim()) bshape.push_back(1);
    linear = add(linear, mul(reshape(arange(Scalar(batches)), bshape), Scalar(stride)));
  }
  return linear;
}

Shape nd_flat_shape(const Tensor& data, int64_t leading) {
  int64_t rows = 1;
  for (int64_t d = 0; d < leading; ++d) rows *= data.size(d);
  Shape s{rows};
  for (int64_t d = leading; d < data.dim(); ++d) s.push_back(data.size(d));
  return s;
}

void lower_gather_nd(NodeContext& c) {
  const Tensor& data = c.in(0);
  const Tensor& idx = c.in(1);
  const int64_t b = c.attr_int("batch_dims", 0);
  const int64_t k = idx.size(-1);
  Tensor linear = nd_linear_index(data, idx, b);
  Tensor rows =
      index_select(reshape(data, nd_flat_shape(data, b + k)), 0, reshape(linear, {linear.numel()}));
  Shape out(idx.shape().begin(), idx.shape().end() - 1);
  for (int64_t d = b + k; d < data.dim(); ++d) out.push_back(data.size(d));
  c.out(0, reshape(rows, out));
}

void lower_scatter_nd(NodeContext& c) {
  const Tensor& data = c.in(0);
  const Tensor& idx = c.in(1);
  const int64_t k = idx.size(-1);
  const std::string reduction = c.attr_string("reduction", "none");
  Tensor linear = nd_linear_index(data, idx, 0);
  const Shape flat = nd_flat_shape(data, k);
  Shape upd_shape{linear.numel()};
  for (std::size_t d = 1; d < flat.size(); ++d) upd_shape.push_back(flat[d]);
  Tensor upd = reshape(c.in(2), upd_shape);
  Shape lin_shape(upd_shape.size(), 1);
  lin_shape[0] = linear.numel();
  Tensor index = expand(reshape(linear, lin_shape), upd_shape);
  Tensor base = reshape(data, flat);
  Tensor y;
  if (reduction == "none") {
    y = scatter(base, 0, index, upd);
  } else if (reduction == "add") {
    y = scatter_add(base, 0, index, upd);
  } else {
    c.unsupported("ScatterND reduction '{}'", reduction);
  }
  c.out(0, reshape(y, data.shape()));
}

void lower_compress(NodeContext& c) {
  // The selected count depends on the condition's values: no replayable shape.
  graph::Tracer::fail_active("Compress's output shape depends on its condition's values");
  const Tensor& x = c.in(0);
  Tensor idx = reshape(nonzero(c.in(1)), {-1});
  if (!c.has_attr("axis")) {
    c.out(0, index_select(reshape(x, {x.numel()}), 0, idx));
    return;
  }
  c.out(0, index_select(x, c.axis(c.attr_int("axis", 0), x.dim()), idx));
}

// Reverses the first sequence_lens[b] steps of each batch entry b along the time axis.
void lower_reverse_sequence(NodeContext& c) {
  const Tensor& x = c.in(0);
  const int64_t time = c.axis(c.attr_int("time_axis", 0), x.dim());
  const int64_t batch = c.axis(c.attr_int("batch_axis", 1), x.dim());
  Shape ts(static_cast<std::size_t>(x.dim()), 1), bs(static_cast<std::size_t>(x.dim()), 1);
  ts[static_cast<std::size_t>(time)] = x.size(time);
  bs[static_cast<std::size_t>(batch)] = x.size(batch);
  Tensor t = reshape(arange(Scalar(x.size(time))), ts);
  Tensor len = reshape(to_dtype(c.in(1), kInt64), bs);
  Tensor src = where(lt(t, len), sub(sub(len, Scalar(1)), t), t);
  c.out(0, gather(x, time, expand(src, x.shape())));
}

}  // namespace

void add_indexing_ops(OpTable& t) {
  t["Gather"] = {lower_gather, 0, 1, kAllTypes};
  t["GatherElements"] = {lower_gather_elements, 0, 11, kAllTypes};
  t["ScatterElements"] = {lower_scatter_elements, 0, 11, kAllTypes};
  t["Scatter"] = {lower_scatter_elements, 0, 9, kAllTypes};  // opsets 9-10; ScatterElements after
  t["GatherND"] = {lower_gather_nd, 0, 11, kAllTypes};
  t["ScatterND"] = {lower_scatter_nd, 0, 11, kAllTypes};
  t["Compress"] = {lower_compress, 0, 9, kAllTypes};
  t["ReverseSequence"] = {lower_reverse_sequence, 0, 10, kAllTypes};
  t["TopK"] = {lower_topk, 1u << 1, 1, kNumericTypes};
  t["ArgMax"] = {lower_arg<true>, 0, 1, kNumericTypes};
  t["ArgMin"] = {lower_arg<false>, 0, 1, kNumericTypes};
  t["CumSum"] = {lower_cumsum, 1u << 1, 11, kNumericTypes};
  t["OneHot"] = {lower_one_hot, 1u << 1, 9, kNumericTypes};
  t["NonZero"] = {lower_nonzero, 0, 9, kAllTypes};
}

}  // namespace ath::onnx::detail
