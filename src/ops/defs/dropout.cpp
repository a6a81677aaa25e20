// dropout and dropout_backward: definitions and gradient formulas. The public function draws the
// counters (philox_seed_offset, creation.h's random convention) and passes them as an input, so
// the op is a pure function of (x, [seed, offset]): replaying it gives the same mask, and a
// replayed graph, which draws again, a fresh one.
#include "athanor/ops/creation.h"
#include "athanor/ops/dispatch.h"
#include "athanor/ops/nn_functional.h"

namespace ath {

namespace {
double keep_scale(double p) { return p >= 1.0 ? 0.0 : 1.0 / (1.0 - p); }
}  // namespace

const Op<DropoutAttrs>& op_dropout() {
  static const auto& op = define_op<DropoutAttrs>({
      .name = "dropout",
      .kind = OpKind::Opaque,
      .num_inputs = 2,   // x, [seed, offset]
      .num_outputs = 2,  // y, keep mask (bool)
      .save_outputs = 0b10,
      .promote_inputs = 0b01,  // the pair stays int64
      .infer =
          [](TensorSpan in, const DropoutAttrs& a) {
            ATH_CHECK(in[1].dtype() == kInt64 && in[1].shape() == Shape{2}, ValueError,
                      "expected the [seed, offset] input to be an int64 tensor of shape [2], "
                      "got {} {}",
                      dtype_name(in[1].dtype()), to_string(in[1].shape()));
            ATH_CHECK(a.p >= 0.0 && a.p <= 1.0, ValueError,
                      "dropout probability has to be between 0 and 1, but got {}", a.p);
            DType t = in[0].dtype();
            ATH_CHECK(is_floating(t), DTypeError, "expected a floating input, got {}",
                      dtype_name(t));
            return OutputSpec{{{in[0].shape(), t}, {in[0].shape(), kBool}}, t};
          },
      .backward =
          [](BackwardContext& ctx, const DropoutAttrs& a) {
            ctx.set_grad_input(0, call1(op_dropout_backward(), {ctx.grad_output(0), ctx.output(1)},
                                        DropoutBackwardAttrs{.scale = keep_scale(a.p)}));
          },
  });
  return op;
}

const Op<DropoutBackwardAttrs>& op_dropout_backward() {
  static const auto& op = define_op<DropoutBackwardAttrs>({
      .name = "dropout_backward",
      .kind = OpKind::Pointwise,
      .num_inputs = 2,  // g, mask
      .save_inputs = 0b10,
      .promote_inputs = 0b01,  // the mask stays bool
      .infer =
          [](TensorSpan in, const DropoutBackwardAttrs&) {
            ATH_CHECK(in[0].shape() == in[1].shape(), ShapeError,
                      "grad shape {} doesn't match mask shape {}", to_string(in[0].shape()),
                      to_string(in[1].shape()));
            ATH_CHECK(in[1].dtype() == kBool, DTypeError, "expected a bool mask, got {}",
                      dtype_name(in[1].dtype()));
            DType t = in[0].dtype();
            ATH_CHECK(is_floating(t), DTypeError, "expected a floating grad, got {}",
                      dtype_name(t));
            return OutputSpec{{{in[0].shape(), t}}, t};
          },
      .backward =
          [](BackwardContext& ctx, const DropoutBackwardAttrs& a) {
            // Linear in g: its own adjoint. The mask is not differentiable.
            if (ctx.needs_grad(0)) {
              ctx.set_grad_input(
                  0, call1(op_dropout_backward(), {ctx.grad_output(0), ctx.input(1)}, a));
            }
          },
  });
  return op;
}

Tensor dropout(const Tensor& x, double p, bool training, Generator* generator) {
  with_op_context(op_dropout(), [&] {
    ATH_CHECK(p >= 0.0 && p <= 1.0, ValueError,
              "dropout probability has to be between 0 and 1, but got {}", p);
  });
  if (!training || p == 0.0) return x;
  with_op_context(op_dropout(), [&] {  // refuse before drawing: the generator stays as it was
    ATH_CHECK(is_floating(x.dtype()), DTypeError, "expected a floating input, got {}",
              dtype_name(x.dtype()));
  });
  // One 32-bit word per element.
  Tensor seed_offset = philox_seed_offset(static_cast<uint64_t>(x.numel()), generator);
  return call1(op_dropout(), {x, seed_offset}, DropoutAttrs{.p = p});
}

}  // namespace ath
