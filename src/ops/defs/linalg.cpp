// mm, bmm, matmul: definitions, shape rules, backward formulas, and torch.matmul's dispatch
// over operand ranks. addmm and linear live in linalg_linear.cpp.
#include "athanor/ops/linalg.h"

#include "athanor/ops/dispatch.h"
#include "athanor/ops/reduction.h"
#include "athanor/ops/views.h"

namespace ath {

namespace detail {

// The common dtype of two matrix operands; matrix products are for floating types only.
DType matmul_dtype(const Tensor& a, const Tensor& b) {
  DType t = promote_types(a.dtype(), b.dtype());
  ATH_CHECK(is_floating(t), DTypeError,
            "expected floating operands, got {} and {} (shapes {} and {})", dtype_name(a.dtype()),
            dtype_name(b.dtype()), to_string(a.shape()), to_string(b.shape()));
  return t;
}

void check_inner(const Tensor& a, const Tensor& b) {
  ATH_CHECK(a.shape()[a.dim() - 1] == b.shape()[b.dim() - 2], ShapeError,
            "shapes {} and {} cannot be multiplied ({} != {})", to_string(a.shape()),
            to_string(b.shape()), a.shape()[a.dim() - 1], b.shape()[b.dim() - 2]);
}

// a^T @ g, the gradient of a product's right operand, via `product`. When g has fewer columns
// than a, (g^T @ a)^T: a batched left operand that is column-major is copied row-major first
// (gemm_dnnl.cpp), and this copies the smaller one; a single matrix is read in place, and the
// product with the fewer output rows is the faster one there too (x^T g with x [2048, 128], g
// [2048, 512]: 809-850 us, against 959-1023 us for g^T x, AVX-512 host). The choice depends on
// shapes only, so results stay independent of the thread count.
template <class Product>
Tensor left_transposed_product(const Tensor& a, const Tensor& g, const Product& product) {
  const bool a_row_major = a.stride(-1) == 1 && a.size(-1) > 1;
  const bool g_row_major = g.stride(-1) == 1;
  if (a_row_major && g_row_major && g.size(-1) < a.size(-1)) return product(g.mT(), a).mT();
  return product(a.mT(), g);
}

}  // namespace detail

namespace {

OutputSpec mm_spec(TensorSpan in, const NoAttrs&) {
  const Tensor &a = in[0], &b = in[1];
  ATH_CHECK(a.dim() == 2 && b.dim() == 2, ShapeError, "expected 2-D matrices, got shapes {} and {}",
            to_string(a.shape()), to_string(b.shape()));
  detail::check_inner(a, b);
  DType t = detail::matmul_dtype(a, b);
  return OutputSpec{{{Shape{a.shape()[0], b.shape()[1]}, t}}, t};
}

OutputSpec bmm_spec(TensorSpan in, const NoAttrs&) {
  const Tensor &a = in[0], &b = in[1];
  ATH_CHECK(a.dim() == 3 && b.dim() == 3, ShapeError,
            "expected 3-D batches of matrices, got shapes {} and {}", to_string(a.shape()),
            to_string(b.shape()));
  ATH_CHECK(a.shape()[0] == b.shape()[0], ShapeError,
            "batch sizes differ: shapes {} and {} (bmm does not broadcast; use matmul)",
            to_string(a.shape()), to_string(b.shape()));
  detail::check_inner(a, b);
  DType t = detail::matmul_dtype(a, b);
  return OutputSpec{{{Shape{a.shape()[0], a.shape()[1], b.shape()[2]}, t}}, t};
}

OutputSpec matmul_spec(TensorSpan in, const NoAttrs&) {
  const Tensor &a = in[0], &b = in[1];
  ATH_CHECK(a.dim() >= 2 && b.dim() >= 2, ShapeError,
            "the batched product takes operands of at least 2 dims, got shapes {} and {}",
            to_string(a.shape()), to_string(b.shape()));
  detail::check_inner(a, b);
  Shape batch_a(a.shape().begin(), a.shape().end() - 2);
  Shape batch_b(b.shape().begin(), b.shape().end() - 2);
  Shape out;
  try {
    out = broadcast_shapes(batch_a, batch_b);
  } catch (const ShapeError&) {
    ATH_THROW(ShapeError, "batch dims of shapes {} and {} do not broadcast", to_string(a.shape()),
              to_string(b.shape()));
  }
  out.push_back(a.shape()[a.dim() - 2]);
  out.push_back(b.shape()[b.dim() - 1]);
  DType t = detail::matmul_dtype(a, b);
  return OutputSpec{{{out, t}}, t};
}

}  // namespace

const Op<NoAttrs>& op_mm() {
  static const auto& op = define_op<NoAttrs>({
      .name = "mm",
      .kind = OpKind::Opaque,
      .num_inputs = 2,
      .autocast = AutocastPolicy::LowPrecision,
      .save_inputs = 0b11,
      .infer = mm_spec,
      .backward =
          [](BackwardContext& ctx, const NoAttrs&) {
            const Tensor& g = ctx.grad_output(0);
            if (ctx.needs_grad(0)) ctx.set_grad_input(0, mm(g, ctx.input(1).t()));
            if (ctx.needs_grad(1)) {
              ctx.set_grad_input(1, detail::left_transposed_product(ctx.input(0), g, mm));
            }
          },
  });
  return op;
}

const Op<NoAttrs>& op_bmm() {
  static const auto& op = define_op<NoAttrs>({
      .name = "bmm",
      .kind = OpKind::Opaque,
      .num_inputs = 2,
      .autocast = AutocastPolicy::LowPrecision,
      .save_inputs = 0b11,
      .infer = bmm_spec,
      .backward =
          [](BackwardContext& ctx, const NoAttrs&) {
            const Tensor& g = ctx.grad_output(0);
            if (ctx.needs_grad(0)) ctx.set_grad_input(0, bmm(g, ctx.input(1).mT()));
            if (ctx.needs_grad(1)) {
              ctx.set_grad_input(1, detail::left_transposed_product(ctx.input(0), g, bmm));
            }
          },
  });
  return op;
}

const Op<NoAttrs>& op_matmul() {
  static const auto& op = define_op<NoAttrs>({
      .name = "matmul",
      .kind = OpKind::Opaque,
      .num_inputs = 2,
      .autocast = AutocastPolicy::LowPrecision,
      .save_inputs = 0b11,
      .infer = matmul_spec,
      .backward =
          [](BackwardContext& ctx, const NoAttrs&) {
            // Broadcast batch dims sum back to each operand's shape.
            const Tensor& g = ctx.grad_output(0);
            if (ctx.needs_grad(0)) {
              Tensor ga = call1(op_matmul(), {g, ctx.input(1).mT()});
              ctx.set_grad_input(0, sum_to(ga, ctx.input_meta(0).shape));
            }
            if (ctx.needs_grad(1)) {
              Tensor gb = detail::left_transposed_product(ctx.input(0), g,
                                                          [](const Tensor& x, const Tensor& y) {
                                                            return call1(op_matmul(), {x, y});
                                                          });
              ctx.set_grad_input(1, sum_to(gb, ctx.input_meta(1).shape));
            }
          },
  });
  return op;
}

Tensor mm(const Tensor& a, const Tensor& b) { return call1(op_mm(), {a, b}); }
Tensor bmm(const Tensor& a, const Tensor& b) { return call1(op_bmm(), {a, b}); }

Tensor matmul(const Tensor& a, const Tensor& b) {
  return with_op_context(op_matmul(), [&]() -> Tensor {
    ATH_CHECK(a.dim() >= 1 && b.dim() >= 1, ShapeError,
              "both arguments need at least 1 dimension, got shapes {} and {}",
              to_string(a.shape()), to_string(b.shape()));
    const int64_t da = a.dim(), db = b.dim();
    if (da == 1 && db == 1) {  // dot product
      ATH_CHECK(a.shape()[0] == b.shape()[0], ShapeError,
                "1-D operands of different lengths: shapes {} and {}", to_string(a.shape()),
                to_string(b.shape()));
      return mm(a.unsqueeze(0), b.unsqueeze(1)).view({});
    }
    if (da == 2 && db == 1) return mm(a, b.unsqueeze(1)).squeeze(1);
    if (da == 1 && db == 2) return mm(a.unsqueeze(0), b).squeeze(0);
    if (da == 2 && db == 2) return mm(a, b);
    if (da >= 3 && db <= 2) {
      // Fold a's batch dims into its rows: one large GEMM instead of a batch of small ones
      // (and the weight gradient a^T g comes out summed, not as a batch to reduce).
      const int64_t k = a.shape()[da - 1];
      ATH_CHECK(k == b.shape()[0], ShapeError, "shapes {} and {} cannot be multiplied ({} != {})",
                to_string(a.shape()), to_string(b.shape()), k, b.shape()[0]);
      int64_t rows = 1;
      for (int64_t d = 0; d + 1 < da; ++d) rows *= a.shape()[d];
      Shape out(a.shape().begin(), a.shape().end() - 1);
      Tensor bm = db == 1 ? b.unsqueeze(1) : b;
      if (db == 2) out.push_back(b.shape()[1]);
      return mm(a.reshape({rows, k}), bm).view(out);
    }
    if (da == 1) return call1(op_matmul(), {a.unsqueeze(0), b}).squeeze(-2);
    return call1(op_matmul(), {a, b});
  });
}

Tensor Tensor::matmul(const Tensor& other) const { return ath::matmul(*this, other); }

}  // namespace ath
