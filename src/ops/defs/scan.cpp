// cumsum, cumprod, cumprod_backward and cumprod_double_backward: definitions and backward
// formulas.
#include "athanor/ops/comparison.h"
#include "athanor/ops/dispatch.h"
#include "athanor/ops/indexing.h"
#include "athanor/ops/pointwise.h"
#include "reduce_common.h"

namespace ath {

namespace {

OutputSpec scan_spec(TensorSpan in, const ScanAttrs& a) {
  DType t = in[0].dtype();
  DType out_t = a.dtype.value_or(is_floating(t) ? t : kInt64);
  ATH_CHECK(out_t != kBool, DTypeError, "a bool result is not supported");
  detail::check_dims_in_range({a.dim}, in[0].dim());
  return OutputSpec{{{in[0].shape(), out_t}}, out_t};
}

// The scan that sums the gradient back: the same dim, the opposite direction.
ScanAttrs adjoint(const ScanAttrs& a) {
  return ScanAttrs{.dim = a.dim, .reverse = !a.reverse, .exclusive = a.exclusive};
}

}  // namespace

const Op<ScanAttrs>& op_cumsum() {
  static const auto& op = define_op<ScanAttrs>({
      .name = "cumsum",
      .kind = OpKind::Opaque,
      .autocast = AutocastPolicy::Float32,
      .infer = scan_spec,
      .backward =
          [](BackwardContext& ctx, const ScanAttrs& a) {
            ctx.set_grad_input(0, cumsum(ctx.grad_output(0), adjoint(a)));
          },
  });
  return op;
}

const Op<ScanAttrs>& op_cumprod() {
  static const auto& op = define_op<ScanAttrs>({
      .name = "cumprod",
      .kind = OpKind::Opaque,
      .autocast = AutocastPolicy::Float32,
      .save_inputs = 0b1,
      .save_outputs = 0b1,
      .infer = scan_spec,
      .backward =
          [](BackwardContext& ctx, const ScanAttrs& a) {
            // Both formulas, chosen per scanned line with no read of the data on the host (a
            // replayed graph must not branch on values): where the line has no zero, the later
            // terms g*y summed and divided by x (PyTorch's); where it has one, cumprod_backward
            // (exact, no division). The division sees 1 for x on lines it does not serve, so
            // neither its values nor its own gradient is ever 0/0.
            const Tensor& x = ctx.input(0);
            const Tensor& g = ctx.grad_output(0);
            Tensor y = detail::output_for_backward(ctx, 0, [&] { return cumprod(x, a); });
            Tensor zero_line = logical_not(all(x, {a.dim}, /*keepdim=*/true));
            Tensor divided = div(cumsum(mul(g, y), adjoint(a)), where(zero_line, 1.0, x));
            Tensor in[2] = {g, x};
            Tensor exact = call1(op_cumprod_backward(), TensorSpan(in), a);
            ctx.set_grad_input(0, where(zero_line, exact, divided));
          },
  });
  return op;
}

const Op<ScanAttrs>& op_cumprod_backward() {
  static const auto& op = define_op<ScanAttrs>({
      .name = "cumprod_backward",
      .kind = OpKind::Opaque,
      .num_inputs = 2,
      .infer =
          [](TensorSpan in, const ScanAttrs&) {
            ATH_CHECK(in[0].shape() == in[1].shape(), ShapeError,
                      "grad shape {} does not match input shape {}", to_string(in[0].shape()),
                      to_string(in[1].shape()));
            DType t = promote_types(in[0].dtype(), in[1].dtype());
            detail::check_floating(t, "cumprod_backward");
            return OutputSpec{{{in[1].shape(), t}}, t};
          },
      .backward =
          [](BackwardContext& ctx, const ScanAttrs&) {
            // cumprod's backward keeps this op's result only on lines with a zero, so the
            // gradient arriving here is zero elsewhere; the kernel checks that on the data.
            Tensor zeros_or_throw = call1(op_cumprod_double_backward(), {ctx.grad_output(0)});
            ctx.set_grad_input(0, zeros_or_throw);
            ctx.set_grad_input(1, zeros_or_throw);
          },
  });
  return op;
}

const Op<NoAttrs>& op_cumprod_double_backward() {
  static const auto& op = define_op<NoAttrs>({
      .name = "cumprod_double_backward",
      .kind = OpKind::Opaque,
      .num_inputs = 1,
      .infer =
          [](TensorSpan in, const NoAttrs&) {
            detail::check_floating(in[0].dtype(), "cumprod_double_backward");
            return OutputSpec{{{in[0].shape(), in[0].dtype()}}, in[0].dtype()};
          },
      .not_differentiable = "the second derivative of cumprod where the input has zeros, which "
                            "it only checks is not needed",
  });
  return op;
}

Tensor cumsum(const Tensor& x, const ScanAttrs& attrs) { return call1(op_cumsum(), {x}, attrs); }
Tensor cumprod(const Tensor& x, const ScanAttrs& attrs) { return call1(op_cumprod(), {x}, attrs); }

namespace {
ScanAttrs scan_attrs(const OpDef& op, const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  return ScanAttrs{.dim = with_op_context(op, [&] { return normalize_dim(dim, x.dim()); }),
                   .dtype = dtype};
}
}  // namespace

Tensor cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  return cumsum(x, scan_attrs(op_cumsum(), x, dim, dtype));
}
Tensor cumprod(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  return cumprod(x, scan_attrs(op_cumprod(), x, dim, dtype));
}

}  // namespace ath
