// reduction_aux: the internal pointwise helpers of the reduction family's
// backward formulas (see athanor/ops/reduction_aux.h). Each derivative is again a reduction_aux
// call, so formulas built on them differentiate to any order.
#include "athanor/ops/reduction_aux.h"

#include "athanor/ops/dispatch.h"
#include "athanor/ops/pointwise.h"
#include "reduce_common.h"

namespace ath {

namespace {

// d/dx of each function, times g.
Tensor aux_derivative(const Tensor& g, const Tensor& x, const Tensor& y, const AuxAttrs& a) {
  switch (a.fn) {
    case AuxFn::SignPow:  // q |x|^(q-1), 0 at x == 0
      return mul(g, mul(reduction_aux(x, {.fn = AuxFn::AbsPow, .q = a.q - 1}), a.q));
    case AuxFn::AbsPow:  // q sign(x) |x|^(q-1), 0 at x == 0
      return mul(g, mul(reduction_aux(x, {.fn = AuxFn::SignPow, .q = a.q - 1}), a.q));
    case AuxFn::Recip0:  // -1/x^2, 0 at x == 0
      return neg(mul(g, mul(y, y)));
  }
  return Tensor();
}

}  // namespace

const Op<AuxAttrs>& op_reduction_aux() {
  static const auto& op = define_op<AuxAttrs>({
      .name = "reduction_aux",
      .kind = OpKind::Pointwise,
      .save_inputs = 0b1,
      .save_outputs = 0b1,
      .infer =
          [](TensorSpan in, const AuxAttrs&) {
            ATH_CHECK(is_floating(in[0].dtype()), DTypeError, "needs a floating input, got {}",
                      dtype_name(in[0].dtype()));
            return OutputSpec{{{in[0].shape(), in[0].dtype()}}, in[0].dtype()};
          },
      .backward =
          [](BackwardContext& ctx, const AuxAttrs& a) {
            // sign(x) = SignPow(0) is piecewise constant: no gradient.
            if (a.fn == AuxFn::SignPow && a.q == 0) return;
            const Tensor& x = ctx.input(0);
            Tensor y = detail::output_for_backward(ctx, 0, [&] { return reduction_aux(x, a); });
            ctx.set_grad_input(0, aux_derivative(ctx.grad_output(0), x, y, a));
          },
  });
  return op;
}

Tensor reduction_aux(const Tensor& x, const AuxAttrs& attrs) {
  return call1(op_reduction_aux(), {x}, attrs);
}

}  // namespace ath
