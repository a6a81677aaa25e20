// gather, scatter (tensor and scalar source) and scatter_add: definitions, shape rules (torch's),
// backward formulas.
#include "athanor/ops/copy.h"
#include "athanor/ops/creation.h"
#include "athanor/ops/dispatch.h"
#include "athanor/ops/indexing.h"
#include "athanor/ops/views.h"
#include "index_checks.h"

namespace ath {

using detail::check_dim;
using detail::check_index_dtype;
using detail::index_dims;
using detail::index_size;

namespace {

// torch's rule: index has self's number of dims and index.size(d) <= self.size(d) for d != dim;
// with a src, also index.size(d) <= src.size(d) for every d.
void check_scatter_gather(const Tensor& self, int64_t dim, const Tensor& index, const Tensor* src,
                          const char* self_name) {
  check_dim(dim, self);
  check_index_dtype(index, /*allow_int32=*/false);
  ATH_CHECK(index_dims(index) == index_dims(self), ShapeError,
            "index tensor must have the same number of dims as {} ({} vs {})", self_name,
            index.dim(), self.dim());
  for (int64_t d = 0; d < index_dims(self); ++d) {
    ATH_CHECK(d == dim || index_size(index, d) <= index_size(self, d), ShapeError,
              "index shape {} must not exceed {} shape {} apart from dim {} (at dim {})",
              to_string(index.shape()), self_name, to_string(self.shape()), dim, d);
  }
  if (src == nullptr) return;
  ATH_CHECK(src->dtype() == self.dtype(), DTypeError,
            "self ({}) and src ({}) must have the same dtype", dtype_name(self.dtype()),
            dtype_name(src->dtype()));
  ATH_CHECK(index_dims(*src) == index_dims(self), ShapeError,
            "src must have the same number of dims as self ({} vs {})", src->dim(), self.dim());
  for (int64_t d = 0; d < index_dims(self); ++d) {
    ATH_CHECK(index_size(index, d) <= index_size(*src, d), ShapeError,
              "index shape {} must not exceed src shape {} (at dim {})", to_string(index.shape()),
              to_string(src->shape()), d);
  }
}

OutputSpec same_as_self(TensorSpan in) {
  return OutputSpec{{{in[0].shape(), in[0].dtype()}}, in[0].dtype()};
}

// The gradient for src: gather(grad) over the region index covers, zeros beyond it (src may be
// larger than index).
Tensor src_grad(const Tensor& grad, int64_t dim, const Tensor& index, const Shape& src_shape) {
  Tensor g = gather(grad, dim, index);
  if (g.shape() == src_shape) return g;
  return call1(op_view_scatter(), {g},
               ViewScatterAttrs{.base_shape = src_shape,
                                .size = g.shape(),
                                .stride = contiguous_strides(src_shape),
                                .offset = 0});
}

}  // namespace

const Op<DimAttrs>& op_gather() {
  static const auto& op = define_op<DimAttrs>({
      .name = "gather",
      .kind = OpKind::Opaque,
      .num_inputs = 2,
      .save_inputs = 0b10,
      .promote_inputs = 0b01,
      .infer =
          [](TensorSpan in, const DimAttrs& a) {
            check_scatter_gather(in[0], a.dim, in[1], nullptr, "input");
            return OutputSpec{{{in[1].shape(), in[0].dtype()}}, in[0].dtype()};
          },
      .backward =
          [](BackwardContext& ctx, const DimAttrs& a) {
            const Tensor& g = ctx.grad_output(0);
            Tensor z = zeros(ctx.input_meta(0).shape, g.dtype());
            ctx.set_grad_input(0, scatter_add(z, a.dim, ctx.input(1), g));
          },
  });
  return op;
}

const Op<DimAttrs>& op_scatter() {
  static const auto& op = define_op<DimAttrs>({
      .name = "scatter",
      .kind = OpKind::Opaque,
      .num_inputs = 3,
      .save_inputs = 0b010,
      .promote_inputs = 0b101,
      .infer =
          [](TensorSpan in, const DimAttrs& a) {
            check_scatter_gather(in[0], a.dim, in[1], &in[2], "self");
            return same_as_self(in);
          },
      .backward =
          [](BackwardContext& ctx, const DimAttrs& a) {
            // Overwritten positions of self get no gradient. With duplicate indices only one
            // src element lands, but each gets gather(grad), as in torch (exact for unique ones).
            const Tensor& g = ctx.grad_output(0);
            const Tensor& index = ctx.input(1);
            if (ctx.needs_grad(0)) ctx.set_grad_input(0, scatter(g, a.dim, index, 0));
            if (ctx.needs_grad(2)) {
              ctx.set_grad_input(2, src_grad(g, a.dim, index, ctx.input_meta(2).shape));
            }
          },
  });
  return op;
}

const Op<ScatterValueAttrs>& op_scatter_value() {
  static const auto& op = define_op<ScatterValueAttrs>({
      .name = "scatter_value",
      .kind = OpKind::Opaque,
      .num_inputs = 2,
      .save_inputs = 0b10,
      .promote_inputs = 0b01,
      .infer =
          [](TensorSpan in, const ScatterValueAttrs& a) {
            check_scatter_gather(in[0], a.dim, in[1], nullptr, "self");
            return same_as_self(in);
          },
      .backward =
          [](BackwardContext& ctx, const ScatterValueAttrs& a) {
            ctx.set_grad_input(0, scatter(ctx.grad_output(0), a.dim, ctx.input(1), 0));
          },
  });
  return op;
}

const Op<DimAttrs>& op_scatter_add() {
  static const auto& op = define_op<DimAttrs>({
      .name = "scatter_add",
      .kind = OpKind::Opaque,
      .num_inputs = 3,
      .save_inputs = 0b010,
      .promote_inputs = 0b101,
      .infer =
          [](TensorSpan in, const DimAttrs& a) {
            check_scatter_gather(in[0], a.dim, in[1], &in[2], "self");
            return same_as_self(in);
          },
      .backward =
          [](BackwardContext& ctx, const DimAttrs& a) {
            const Tensor& g = ctx.grad_output(0);
            if (ctx.needs_grad(0)) ctx.set_grad_input(0, g);
            if (ctx.needs_grad(2)) {
              ctx.set_grad_input(2, src_grad(g, a.dim, ctx.input(1), ctx.input_meta(2).shape));
            }
          },
  });
  return op;
}

namespace {
template <class A>
int64_t normalized_dim(const Op<A>& op, int64_t dim, const Tensor& t) {
  return with_op_context(op, [&] { return normalize_dim(dim, t.dim()); });
}
}  // namespace

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  return call1(op_gather(), {x, index}, DimAttrs{.dim = normalized_dim(op_gather(), dim, x)});
}

Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return call1(op_scatter(), {self, index, src},
               DimAttrs{.dim = normalized_dim(op_scatter(), dim, self)});
}

Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  return call1(
      op_scatter_value(), {self, index},
      ScatterValueAttrs{.dim = normalized_dim(op_scatter_value(), dim, self), .value = value});
}

Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return call1(op_scatter_add(), {self, index, src},
               DimAttrs{.dim = normalized_dim(op_scatter_add(), dim, self)});
}

}  // namespace ath
