// amax, amin, max/min along a dim (values + indices), argmax, argmin: definitions and backward
// formulas.
#include <numeric>

#include "athanor/ops/comparison.h"
#include "athanor/ops/copy.h"
#include "athanor/ops/creation.h"
#include "athanor/ops/dispatch.h"
#include "athanor/ops/pointwise.h"
#include "athanor/ops/reduction_aux.h"
#include "athanor/ops/views.h"
#include "reduce_common.h"

namespace ath {

namespace {

OutputSpec extremum_spec(TensorSpan in, const ReduceAttrs& a) {
  detail::check_dims_in_range(a.dims, in[0].dim());
  detail::check_nonempty_reduction(in[0].shape(), a.dims);
  DType t = in[0].dtype();
  return OutputSpec{{{reduced_shape(in[0].shape(), a.dims, a.keepdim), t}}, t};
}

// The gradient is split evenly among the elements equal to the extremum, as in PyTorch.
void extremum_backward(BackwardContext& ctx, const ReduceAttrs& a) {
  const Tensor& x = ctx.input(0);
  Tensor y = keepdim_view(ctx.output(0), x.shape(), a.dims, a.keepdim);
  Tensor g = keepdim_view(ctx.grad_output(0), x.shape(), a.dims, a.keepdim);
  Tensor mask = eq(x, y);
  Tensor count = sum(mask, a.dims, /*keepdim=*/true);
  ctx.set_grad_input(0, div(mul(g, mask), count));
}

OutputSpec dim_spec(TensorSpan in, const DimKeepAttrs& a) {
  const Shape& s = in[0].shape();
  detail::check_dims_in_range({a.dim}, in[0].dim());
  DimList dims = in[0].dim() == 0 ? DimList{} : DimList{a.dim};
  detail::check_nonempty_reduction(s, dims);
  Shape out = reduced_shape(s, dims, a.keepdim);
  return OutputSpec{{{out, in[0].dtype()}, {out, kInt64}}, in[0].dtype()};
}

// Routes the gradient to the returned index: grad * (indices == arange along dim).
void dim_backward(BackwardContext& ctx, const DimKeepAttrs& a) {
  const Shape& s = ctx.input_meta(0).shape;
  Tensor g = ctx.grad_output(0);
  if (s.empty()) {
    ctx.set_grad_input(0, g);
    return;
  }
  Tensor idx = ctx.output(1);
  if (!a.keepdim) {
    g = g.unsqueeze(a.dim);
    idx = idx.unsqueeze(a.dim);
  }
  const int64_t n = s[static_cast<std::size_t>(a.dim)];
  std::vector<int64_t> range(static_cast<std::size_t>(n));
  std::iota(range.begin(), range.end(), int64_t{0});
  Shape range_shape(s.size(), 1);
  range_shape[static_cast<std::size_t>(a.dim)] = n;
  Tensor one_hot = eq(idx, from_vector(range, range_shape));
  ctx.set_grad_input(0, mul(g, one_hot));
}

OutputSpec arg_spec(TensorSpan in, const ArgAttrs& a) {
  const Shape& s = in[0].shape();
  ATH_CHECK(in[0].dtype() != kBool, DTypeError, "not implemented for bool inputs");
  if (a.dim) detail::check_dims_in_range({*a.dim}, in[0].dim());
  Shape out;
  if (!a.dim || s.empty()) {
    detail::check_nonempty_reduction(s, {});
    if (a.keepdim) out = Shape(s.size(), 1);
  } else {
    detail::check_nonempty_reduction(s, {*a.dim});
    out = reduced_shape(s, {*a.dim}, a.keepdim);
  }
  return OutputSpec{{{out, kInt64}}, in[0].dtype()};
}

ReduceAttrs normalized(const Tensor& x, const DimList& dims, bool keepdim) {
  return ReduceAttrs{.dims = normalize_dims(dims, x.dim()), .keepdim = keepdim};
}

}  // namespace

const Op<ReduceAttrs>& op_amax() {
  static const auto& op = define_op<ReduceAttrs>({
      .name = "amax",
      .kind = OpKind::Reduce,
      .save_inputs = 0b1,
      .save_outputs = 0b1,
      .infer = extremum_spec,
      .backward = extremum_backward,
  });
  return op;
}

const Op<ReduceAttrs>& op_amin() {
  static const auto& op = define_op<ReduceAttrs>({
      .name = "amin",
      .kind = OpKind::Reduce,
      .save_inputs = 0b1,
      .save_outputs = 0b1,
      .infer = extremum_spec,
      .backward = extremum_backward,
  });
  return op;
}

const Op<DimKeepAttrs>& op_max_dim() {
  static const auto& op = define_op<DimKeepAttrs>({
      .name = "max_dim",
      .kind = OpKind::Reduce,
      .num_outputs = 2,
      .save_outputs = 0b10,
      .infer = dim_spec,
      .backward = dim_backward,
  });
  return op;
}

const Op<DimKeepAttrs>& op_min_dim() {
  static const auto& op = define_op<DimKeepAttrs>({
      .name = "min_dim",
      .kind = OpKind::Reduce,
      .num_outputs = 2,
      .save_outputs = 0b10,
      .infer = dim_spec,
      .backward = dim_backward,
  });
  return op;
}

const Op<ArgAttrs>& op_argmax() {
  static const auto& op = define_op<ArgAttrs>({
      .name = "argmax",
      .kind = OpKind::Reduce,
      .infer = arg_spec,
      .not_differentiable = "returns integer indices",
  });
  return op;
}

const Op<ArgAttrs>& op_argmin() {
  static const auto& op = define_op<ArgAttrs>({
      .name = "argmin",
      .kind = OpKind::Reduce,
      .infer = arg_spec,
      .not_differentiable = "returns integer indices",
  });
  return op;
}

Tensor amax(const Tensor& x, const DimList& dims, bool keepdim) {
  ReduceAttrs a = with_op_context(op_amax(), [&] { return normalized(x, dims, keepdim); });
  return call1(op_amax(), {x}, a);
}
Tensor amin(const Tensor& x, const DimList& dims, bool keepdim) {
  ReduceAttrs a = with_op_context(op_amin(), [&] { return normalized(x, dims, keepdim); });
  return call1(op_amin(), {x}, a);
}
Tensor max(const Tensor& x) { return amax(x); }
Tensor min(const Tensor& x) { return amin(x); }

namespace {
ValuesIndices along_dim(const Op<DimKeepAttrs>& op, const Tensor& x, int64_t dim, bool keepdim) {
  DimKeepAttrs a{.dim = with_op_context(op, [&] { return normalize_dim(dim, x.dim()); }),
                 .keepdim = keepdim};
  const Tensor in[1] = {x};
  Outputs out = call(op, TensorSpan(in), a);
  return ValuesIndices{std::move(out[0]), std::move(out[1])};
}
Tensor arg(const Op<ArgAttrs>& op, const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  ArgAttrs a{.keepdim = keepdim};
  if (dim) a.dim = with_op_context(op, [&] { return normalize_dim(*dim, x.dim()); });
  return call1(op, {x}, a);
}
}  // namespace

ValuesIndices max(const Tensor& x, int64_t dim, bool keepdim) {
  return along_dim(op_max_dim(), x, dim, keepdim);
}
ValuesIndices min(const Tensor& x, int64_t dim, bool keepdim) {
  return along_dim(op_min_dim(), x, dim, keepdim);
}
Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  return arg(op_argmax(), x, dim, keepdim);
}
Tensor argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  return arg(op_argmin(), x, dim, keepdim);
}

}  // namespace ath
