// sum, mean and sum_to: definitions, shape rules shared by all reductions, backward formulas.
#include <algorithm>

#include "athanor/ops/copy.h"
#include "athanor/ops/dispatch.h"
#include "athanor/ops/pointwise.h"
#include "athanor/ops/reduction.h"

namespace ath {

Shape reduced_shape(const Shape& in, const DimList& dims, bool keepdim) {
  Shape out;
  for (std::size_t d = 0; d < in.size(); ++d) {
    bool reduced = dims.empty() || std::find(dims.begin(), dims.end(), int64_t(d)) != dims.end();
    if (!reduced)
      out.push_back(in[d]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

int64_t reduced_count(const Shape& in, const DimList& dims) {
  if (dims.empty()) return numel(in);
  int64_t n = 1;
  for (int64_t d : dims) n *= in[static_cast<std::size_t>(d)];
  return n;
}

Tensor expand_reduced_grad(const Tensor& grad, const Shape& input_shape, const DimList& dims,
                           bool keepdim) {
  if (keepdim || input_shape.empty()) return grad.expand(input_shape);
  return grad
      .view(reduced_shape(input_shape, normalize_dims(dims, int64_t(input_shape.size())), true))
      .expand(input_shape);
}

Tensor keepdim_view(const Tensor& reduced, const Shape& input_shape, const DimList& dims,
                    bool keepdim) {
  if (keepdim || input_shape.empty()) return reduced;
  return reduced.view(
      reduced_shape(input_shape, normalize_dims(dims, int64_t(input_shape.size())), true));
}

namespace {

ReduceAttrs normalized(const Tensor& x, const ReduceAttrs& a) {
  ReduceAttrs n = a;
  n.dims = normalize_dims(a.dims, x.dim());
  return n;
}

OutputSpec sum_spec(TensorSpan in, const ReduceAttrs& a) {
  DimList dims = normalize_dims(a.dims, in[0].dim());
  DType in_t = in[0].dtype();
  DType out_t = a.dtype.value_or(is_floating(in_t) ? in_t : kInt64);
  return OutputSpec{{{reduced_shape(in[0].shape(), dims, a.keepdim), out_t}}, out_t};
}

}  // namespace

const Op<ReduceAttrs>& op_sum() {
  static const auto& op = define_op<ReduceAttrs>({
      .name = "sum",
      .kind = OpKind::Reduce,
      .autocast = AutocastPolicy::Float32,
      .infer = sum_spec,
      .backward =
          [](BackwardContext& ctx, const ReduceAttrs& a) {
            const Shape& s = ctx.input_meta(0).shape;
            ctx.set_grad_input(0, expand_reduced_grad(ctx.grad_output(0), s, a.dims, a.keepdim));
          },
  });
  return op;
}

const Op<ReduceAttrs>& op_mean() {
  static const auto& op = define_op<ReduceAttrs>({
      .name = "mean",
      .kind = OpKind::Reduce,
      .autocast = AutocastPolicy::Float32,
      .infer =
          [](TensorSpan in, const ReduceAttrs& a) {
            OutputSpec s = sum_spec(in, a);
            ATH_CHECK(
                is_floating(s.kernel_dtype), DTypeError,
                "could not infer the output dtype: input dtype {} is not floating; pass dtype",
                dtype_name(in[0].dtype()));
            return s;
          },
      .backward =
          [](BackwardContext& ctx, const ReduceAttrs& a) {
            const Shape& s = ctx.input_meta(0).shape;
            int64_t n = reduced_count(s, normalize_dims(a.dims, int64_t(s.size())));
            Tensor g = div(ctx.grad_output(0), static_cast<double>(std::max<int64_t>(n, 1)));
            ctx.set_grad_input(0, expand_reduced_grad(g, s, a.dims, a.keepdim));
          },
  });
  return op;
}

Tensor sum(const Tensor& x, const DimList& dims, bool keepdim, std::optional<DType> dtype) {
  ReduceAttrs a = with_op_context(op_sum(), [&] {
    return normalized(x, ReduceAttrs{.dims = dims, .keepdim = keepdim, .dtype = dtype});
  });
  return call1(op_sum(), {x}, a);
}

Tensor mean(const Tensor& x, const DimList& dims, bool keepdim, std::optional<DType> dtype) {
  ReduceAttrs a = with_op_context(op_mean(), [&] {
    return normalized(x, ReduceAttrs{.dims = dims, .keepdim = keepdim, .dtype = dtype});
  });
  return call1(op_mean(), {x}, a);
}

Tensor sum_to(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  const int64_t lead = x.dim() - static_cast<int64_t>(shape.size());
  ATH_CHECK(lead >= 0, ShapeError, "sum_to: shape {} can't be reduced to {}", to_string(x.shape()),
            to_string(shape));
  DimList dims;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (d < lead) {
      dims.push_back(d);
    } else {
      int64_t want = shape[static_cast<std::size_t>(d - lead)];
      ATH_CHECK(want == 1 || want == x.shape()[d], ShapeError,
                "sum_to: shape {} can't be reduced to {}", to_string(x.shape()), to_string(shape));
      if (want == 1 && x.shape()[d] != 1) dims.push_back(d);
    }
  }
  if (dims.empty()) return x.view(shape);
  return sum(x, dims, /*keepdim=*/true).view(shape);
}

Tensor Tensor::sum() const { return ath::sum(*this); }
Tensor Tensor::sum(const DimList& dims, bool keepdim) const {
  return ath::sum(*this, dims, keepdim);
}
Tensor Tensor::mean() const { return ath::mean(*this); }
Tensor Tensor::mean(const DimList& dims, bool keepdim) const {
  return ath::mean(*this, dims, keepdim);
}

}  // namespace ath
