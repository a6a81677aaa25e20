// addmm and linear: matrix products with a bias, which oneDNN adds inside the GEMM.
#include "athanor/ops/dispatch.h"
#include "athanor/ops/linalg.h"
#include "athanor/ops/pointwise.h"
#include "athanor/ops/reduction.h"
#include "epilogue_shared.h"

namespace ath {

namespace detail {
DType matmul_dtype(const Tensor& a, const Tensor& b);
}

const Op<AddmmAttrs>& op_addmm() {
  static const auto& op = define_op<AddmmAttrs>({
      .name = "addmm",
      .kind = OpKind::Opaque,
      .num_inputs = 3,
      .autocast = AutocastPolicy::LowPrecision,
      .save_inputs = 0b110,
      .infer =
          [](TensorSpan in, const AddmmAttrs&) {
            const Tensor &bias = in[0], &a = in[1], &b = in[2];
            ATH_CHECK(a.dim() == 2 && b.dim() == 2, ShapeError,
                      "expected 2-D matrices, got shapes {} and {}", to_string(a.shape()),
                      to_string(b.shape()));
            ATH_CHECK(a.shape()[1] == b.shape()[0], ShapeError,
                      "shapes {} and {} cannot be multiplied ({} != {})", to_string(a.shape()),
                      to_string(b.shape()), a.shape()[1], b.shape()[0]);
            Shape out{a.shape()[0], b.shape()[1]};
            bool fits = bias.dim() <= 2;
            for (int64_t d = 0; fits && d < bias.dim(); ++d) {
              int64_t want = out[static_cast<std::size_t>(2 - bias.dim() + d)];
              fits = bias.shape()[d] == 1 || bias.shape()[d] == want;
            }
            ATH_CHECK(fits, ShapeError, "bias of shape {} does not broadcast to the product's {}",
                      to_string(bias.shape()), to_string(out));
            DType t = promote_types(detail::matmul_dtype(a, b), bias.dtype());
            return OutputSpec{{{out, t}}, t};
          },
      .backward =
          [](BackwardContext& ctx, const AddmmAttrs& at) {
            const Tensor& g = ctx.grad_output(0);
            if (ctx.needs_grad(0)) {
              Tensor gb = at.beta == 1 ? g : mul(g, at.beta);
              ctx.set_grad_input(0, sum_to(gb, ctx.input_meta(0).shape));
            }
            Tensor ga = at.alpha == 1 ? g : mul(g, at.alpha);
            if (ctx.needs_grad(1)) ctx.set_grad_input(1, mm(ga, ctx.input(2).t()));
            if (ctx.needs_grad(2)) ctx.set_grad_input(2, mm(ctx.input(1).t(), ga));
          },
  });
  return op;
}

namespace detail {

OutputSpec linear_spec(TensorSpan in, const NoAttrs&) {
  ATH_CHECK(in.size() == 2 || in.size() == 3, ValueError,
            "expected (input, weight) or (input, weight, bias), got {} tensors", in.size());
  const Tensor &x = in[0], &w = in[1];
  ATH_CHECK(x.dim() >= 1 && w.dim() == 2, ShapeError,
            "expected input [..., in] and weight [out, in], got shapes {} and {}",
            to_string(x.shape()), to_string(w.shape()));
  ATH_CHECK(x.shape()[x.dim() - 1] == w.shape()[1], ShapeError,
            "input of shape {} has {} features but weight of shape {} expects {}",
            to_string(x.shape()), x.shape()[x.dim() - 1], to_string(w.shape()), w.shape()[1]);
  DType t = detail::matmul_dtype(x, w);
  if (in.size() == 3) {
    const Tensor& b = in[2];
    ATH_CHECK(b.dim() == 1 && b.shape()[0] == w.shape()[0], ShapeError,
              "bias of shape {} does not match weight of shape {} (expected [{}])",
              to_string(b.shape()), to_string(w.shape()), w.shape()[0]);
    t = promote_types(t, b.dtype());
  }
  Shape out(x.shape().begin(), x.shape().end() - 1);
  out.push_back(w.shape()[0]);
  return OutputSpec{{{out, t}}, t};
}

void linear_backward(BackwardContext& ctx, const Tensor& g) {
  const Tensor &x = ctx.input(0), &w = ctx.input(1);
  const int64_t out = w.shape()[0], in = w.shape()[1];
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < x.dim(); ++d) rows *= x.shape()[d];
  if (ctx.needs_grad(0)) ctx.set_grad_input(0, matmul(g, w));
  if (ctx.needs_grad(1) || ctx.num_inputs() == 3) {
    Tensor g2 = g.reshape({rows, out});
    // g^T x, or (x^T g)^T when x is the narrower (as left_transposed_product chooses, and why);
    // AccumulateGrad stores a contiguous copy of the transposed view.
    if (ctx.needs_grad(1)) {
      Tensor x2 = x.reshape({rows, in});
      ctx.set_grad_input(1, in < out && x2.stride(-1) == 1 && g2.stride(-1) == 1
                                ? mm(x2.t(), g2).t()
                                : mm(g2.t(), x2));
    }
    if (ctx.num_inputs() == 3 && ctx.needs_grad(2)) ctx.set_grad_input(2, sum(g2, {0}));
  }
}

}  // namespace detail

const Op<NoAttrs>& op_linear() {
  static const auto& op = define_op<NoAttrs>({
      .name = "linear",
      .kind = OpKind::Opaque,
      .num_inputs = -1,
      .autocast = AutocastPolicy::LowPrecision,
      .save_inputs = 0b011,
      .infer = detail::linear_spec,
      .backward = [](BackwardContext& ctx,
                     const NoAttrs&) { detail::linear_backward(ctx, ctx.grad_output(0)); },
  });
  return op;
}

Tensor addmm(const Tensor& bias, const Tensor& a, const Tensor& b, double beta, double alpha) {
  return call1(op_addmm(), {bias, a, b}, AddmmAttrs{.beta = beta, .alpha = alpha});
}

Tensor linear(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias) {
  if (bias && bias->defined()) return call1(op_linear(), {x, weight, *bias});
  return call1(op_linear(), {x, weight});
}

}  // namespace ath
