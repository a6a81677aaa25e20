// dropout and dropout_backward: definitions and gradient formulas. The random draw happens in
// the public function (counters reserved from the generator) so the op itself is a pure
// function of (x, attrs): replaying it, or its gradient, gives the same mask.
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
      .num_outputs = 2,  // y, keep mask (bool)
      .save_outputs = 0b10,
      .infer =
          [](TensorSpan in, const DropoutAttrs& a) {
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
  Generator& gen = generator != nullptr ? *generator : default_generator();
  // One 32-bit word per element; the seed is read with the reservation's lock released, so a
  // concurrent manual_seed may race with this draw as it would with any other.
  const uint64_t seed = gen.seed();
  const uint64_t base = gen.reserve(static_cast<uint64_t>(x.numel()));
  return call1(op_dropout(), {x}, DropoutAttrs{.p = p, .seed = seed, .base = base});
}

}  // namespace ath
