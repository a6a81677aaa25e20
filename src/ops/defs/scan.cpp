// cumsum, cumprod and cumprod_backward: definitions and backward formulas.
#include "athanor/ops/dispatch.h"
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
      .save_inputs = 0b1,
      .save_outputs = 0b1,
      .infer = scan_spec,
      .backward =
          [](BackwardContext& ctx, const ScanAttrs& a) {
            const Tensor& x = ctx.input(0);
            const Tensor& g = ctx.grad_output(0);
            if (all(x).item<bool>()) {  // no zeros: sum the later terms g*y, divide by x
              Tensor y = detail::output_for_backward(ctx, 0, [&] { return cumprod(x, a); });
              ctx.set_grad_input(0, div(cumsum(mul(g, y), adjoint(a)), x));
            } else {
              Tensor in[2] = {g, x};
              ctx.set_grad_input(0, call1(op_cumprod_backward(), TensorSpan(in), a));
            }
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
          [](BackwardContext&, const ScanAttrs&) {
            ATH_THROW(NotImplementedError,
                      "double backward of cumprod (or prod) with zeros in the input is not "
                      "implemented");
          },
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
