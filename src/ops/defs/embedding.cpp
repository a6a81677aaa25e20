// embedding and embedding_backward: definitions and gradient formulas.
#include "athanor/ops/creation.h"
#include "athanor/ops/dispatch.h"
#include "athanor/ops/nn_functional.h"
#include "athanor/ops/pointwise.h"

namespace ath {

namespace {

void check_indices(const Tensor& idx) {
  ATH_CHECK(idx.dtype() == kInt64 || idx.dtype() == kInt32, DTypeError,
            "expected indices of dtype int64 or int32, got {} (shape {})", dtype_name(idx.dtype()),
            to_string(idx.shape()));
}

}  // namespace

const Op<EmbeddingAttrs>& op_embedding() {
  static const auto& op = define_op<EmbeddingAttrs>({
      .name = "embedding",
      .kind = OpKind::Opaque,
      .num_inputs = 2,  // weight, indices
      .save_inputs = 0b10,
      .promote_inputs = 0b01,  // indices stay integers
      .infer =
          [](TensorSpan in, const EmbeddingAttrs& a) {
            const Tensor &w = in[0], &idx = in[1];
            ATH_CHECK(w.dim() == 2, ShapeError,
                      "expected weight of shape [num_embeddings, embedding_dim], got {}",
                      to_string(w.shape()));
            ATH_CHECK(is_floating(w.dtype()), DTypeError, "expected a floating weight, got {}",
                      dtype_name(w.dtype()));
            check_indices(idx);
            Shape s = idx.shape();
            ATH_CHECK(s.size() < kMaxDims, ShapeError, "indices of shape {} have too many dims",
                      to_string(s));
            s.push_back(w.shape()[1]);
            ATH_CHECK(a.padding_idx >= -1 && a.padding_idx < w.shape()[0], IndexError,
                      "padding_idx {} is out of range for {} embeddings", a.padding_idx,
                      w.shape()[0]);
            return OutputSpec{{{s, w.dtype()}}, w.dtype()};
          },
      .backward =
          [](BackwardContext& ctx, const EmbeddingAttrs& a) {
            if (!ctx.needs_grad(0)) return;
            const Shape& ws = ctx.input_meta(0).shape;
            ctx.set_grad_input(0, call1(op_embedding_backward(), {ctx.grad_output(0), ctx.input(1)},
                                        EmbeddingBackwardAttrs{.num_weights = ws[0],
                                                               .padding_idx = a.padding_idx}));
          },
  });
  return op;
}

const Op<EmbeddingBackwardAttrs>& op_embedding_backward() {
  static const auto& op = define_op<EmbeddingBackwardAttrs>({
      .name = "embedding_backward",
      .kind = OpKind::Opaque,
      .num_inputs = 2,  // g [*indices.shape, dim], indices
      .save_inputs = 0b10,
      .promote_inputs = 0b01,
      .infer =
          [](TensorSpan in, const EmbeddingBackwardAttrs& a) {
            const Tensor &g = in[0], &idx = in[1];
            check_indices(idx);
            ATH_CHECK(is_floating(g.dtype()), DTypeError, "expected a floating grad, got {}",
                      dtype_name(g.dtype()));
            ATH_CHECK(a.num_weights >= 0, ValueError, "num_weights must be >= 0, got {}",
                      a.num_weights);
            ATH_CHECK(a.padding_idx >= -1 && a.padding_idx < a.num_weights, IndexError,
                      "padding_idx {} is out of range for {} embeddings", a.padding_idx,
                      a.num_weights);
            bool ok = g.dim() == idx.dim() + 1;
            for (int64_t d = 0; ok && d < idx.dim(); ++d) ok = g.shape()[d] == idx.shape()[d];
            ATH_CHECK(ok, ShapeError, "grad shape {} doesn't match indices shape {} + [dim]",
                      to_string(g.shape()), to_string(idx.shape()));
            return OutputSpec{{{{a.num_weights, g.shape().back()}, g.dtype()}}, g.dtype()};
          },
      .backward =
          [](BackwardContext& ctx, const EmbeddingBackwardAttrs& a) {
            // The adjoint of a scatter-add is a gather; rows at padding_idx received nothing.
            if (!ctx.needs_grad(0)) return;
            Tensor h = ctx.grad_output(0);
            if (a.padding_idx >= 0) {
              std::vector<double> keep(static_cast<std::size_t>(a.num_weights), 1.0);
              keep[static_cast<std::size_t>(a.padding_idx)] = 0.0;
              h = h * from_vector(keep, Shape{a.num_weights, 1}).to(h.dtype());
            }
            ctx.set_grad_input(0, call1(op_embedding(), {h, ctx.input(1)}, EmbeddingAttrs{}));
          },
  });
  return op;
}

Tensor embedding(const Tensor& weight, const Tensor& indices, std::optional<int64_t> padding_idx) {
  int64_t pad = with_op_context(op_embedding(), [&]() -> int64_t {
    if (!padding_idx) return -1;
    ATH_CHECK(weight.dim() == 2, ShapeError,
              "expected weight of shape [num_embeddings, embedding_dim], got {}",
              to_string(weight.shape()));
    const int64_t n = weight.shape()[0], p = *padding_idx;
    ATH_CHECK(p >= -n && p < n, IndexError, "padding_idx {} is out of range for {} embeddings", p,
              n);
    return p < 0 ? p + n : p;
  });
  return call1(op_embedding(), {weight, indices}, EmbeddingAttrs{.padding_idx = pad});
}

}  // namespace ath
