// index_select and index_add (its adjoint): definitions, shape rules, backward formulas.
#include "athanor/ops/copy.h"
#include "athanor/ops/creation.h"
#include "athanor/ops/dispatch.h"
#include "athanor/ops/indexing.h"
#include "athanor/ops/pointwise.h"
#include "index_checks.h"

namespace ath {

using detail::check_dim;
using detail::check_index_dtype;

namespace {
void check_index_vector(const Tensor& self, const Tensor& index) {
  check_index_dtype(index, /*allow_int32=*/true);
  ATH_CHECK(index.dim() <= 1, ShapeError, "index must be a vector (0-d or 1-d), got shape {}",
            to_string(index.shape()));
  ATH_CHECK(self.dim() > 0 || index.numel() == 1, ShapeError,
            "a 0-dim tensor takes an index of exactly one element, got {}", index.numel());
}

// self's shape with `dim` resized to the number of indices (0-dim stays 0-dim).
Shape indexed_shape(const Tensor& self, int64_t dim, const Tensor& index) {
  Shape s = self.shape();
  if (self.dim() > 0) s[dim] = index.numel();
  return s;
}
}  // namespace

const Op<DimAttrs>& op_index_select() {
  static const auto& op = define_op<DimAttrs>({
      .name = "index_select",
      .kind = OpKind::Opaque,
      .num_inputs = 2,
      .save_inputs = 0b10,
      .promote_inputs = 0b01,
      .infer =
          [](TensorSpan in, const DimAttrs& a) {
            check_dim(a.dim, in[0]);
            check_index_vector(in[0], in[1]);
            DType t = in[0].dtype();
            return OutputSpec{{{indexed_shape(in[0], a.dim, in[1]), t}}, t};
          },
      .backward =
          [](BackwardContext& ctx, const DimAttrs& a) {
            // Rows picked twice receive both gradients: index_add accumulates duplicates.
            const Tensor& g = ctx.grad_output(0);
            Tensor z = zeros(ctx.input_meta(0).shape, g.dtype());
            ctx.set_grad_input(0, index_add(z, a.dim, ctx.input(1), g));
          },
  });
  return op;
}

const Op<IndexAddAttrs>& op_index_add() {
  static const auto& op = define_op<IndexAddAttrs>({
      .name = "index_add",
      .kind = OpKind::Opaque,
      .num_inputs = 3,
      .save_inputs = 0b010,
      .promote_inputs = 0b101,
      .infer =
          [](TensorSpan in, const IndexAddAttrs& a) {
            const Tensor &self = in[0], &index = in[1], &src = in[2];
            check_dim(a.dim, self);
            check_index_vector(self, index);
            ATH_CHECK(src.dtype() == self.dtype(), DTypeError,
                      "self ({}) and source ({}) must have the same dtype",
                      dtype_name(self.dtype()), dtype_name(src.dtype()));
            ATH_CHECK(!a.alpha.is_floating() || is_floating(self.dtype()), DTypeError,
                      "a floating alpha needs a floating tensor, got {}", dtype_name(self.dtype()));
            Shape want = indexed_shape(self, a.dim, index);
            ATH_CHECK(src.shape() == want, ShapeError,
                      "source shape {} doesn't match self shape {} with dim {} sized by the {} "
                      "indices (expected {})",
                      to_string(src.shape()), to_string(self.shape()), a.dim, index.numel(),
                      to_string(want));
            return OutputSpec{{{self.shape(), self.dtype()}}, self.dtype()};
          },
      .backward =
          [](BackwardContext& ctx, const IndexAddAttrs& a) {
            const Tensor& g = ctx.grad_output(0);
            if (ctx.needs_grad(0)) ctx.set_grad_input(0, g);
            if (ctx.needs_grad(2)) {
              Tensor gs = index_select(g, a.dim, ctx.input(1));
              ctx.set_grad_input(2, a.alpha.to_double() == 1.0 ? gs : mul(gs, a.alpha));
            }
          },
  });
  return op;
}

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  int64_t d = with_op_context(op_index_select(), [&] { return normalize_dim(dim, x.dim()); });
  return call1(op_index_select(), {x, index}, DimAttrs{.dim = d});
}

Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                 const Scalar& alpha) {
  int64_t d = with_op_context(op_index_add(), [&] { return normalize_dim(dim, self.dim()); });
  return call1(op_index_add(), {self, index, source}, IndexAddAttrs{.dim = d, .alpha = alpha});
}

}  // namespace ath
