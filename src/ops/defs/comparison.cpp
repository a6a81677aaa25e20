// Comparisons, logical ops and isnan/isinf/isfinite: bool results, no gradient.
#include "athanor/ops/comparison.h"

#include "athanor/ops/pointwise.h"
#include "athanor/ops/reduction.h"
#include "pointwise_defs.h"

namespace ath {

namespace {

constexpr const char* kBoolResult = "its result is a bool tensor";

// Operands promote to a common dtype (the kernel's); the result is bool.
OutputSpec compare_spec(TensorSpan in, const NoAttrs&) {
  OutputSpec s = binary_pointwise_spec(in);
  s.outputs[0].dtype = kBool;
  return s;
}

OutputSpec bool_unary_spec(TensorSpan in, const NoAttrs&) {
  return OutputSpec{{{in[0].shape(), kBool}}, in[0].dtype()};
}

const Op<NoAttrs>& define_bool_op(const char* name, int num_inputs) {
  return define_op<NoAttrs>({
      .name = name,
      .kind = OpKind::Pointwise,
      .num_inputs = num_inputs,
      .infer = num_inputs == 2 ? compare_spec : bool_unary_spec,
      .not_differentiable = kBoolResult,
  });
}

}  // namespace

#define ATH_BOOL_OP(name, arity)                          \
  const Op<NoAttrs>& op_##name() {                        \
    static const auto& op = define_bool_op(#name, arity); \
    return op;                                            \
  }

ATH_BOOL_OP(eq, 2)
ATH_BOOL_OP(ne, 2)
ATH_BOOL_OP(lt, 2)
ATH_BOOL_OP(le, 2)
ATH_BOOL_OP(gt, 2)
ATH_BOOL_OP(ge, 2)
ATH_BOOL_OP(logical_and, 2)
ATH_BOOL_OP(logical_or, 2)
ATH_BOOL_OP(logical_xor, 2)
ATH_BOOL_OP(logical_not, 1)
ATH_BOOL_OP(isnan, 1)
ATH_BOOL_OP(isinf, 1)
ATH_BOOL_OP(isfinite, 1)
#undef ATH_BOOL_OP

Tensor eq(const Tensor& a, const Tensor& b) { return call1(op_eq(), {a, b}); }
Tensor ne(const Tensor& a, const Tensor& b) { return call1(op_ne(), {a, b}); }
Tensor lt(const Tensor& a, const Tensor& b) { return call1(op_lt(), {a, b}); }
Tensor le(const Tensor& a, const Tensor& b) { return call1(op_le(), {a, b}); }
Tensor gt(const Tensor& a, const Tensor& b) { return call1(op_gt(), {a, b}); }
Tensor ge(const Tensor& a, const Tensor& b) { return call1(op_ge(), {a, b}); }
Tensor eq(const Tensor& a, const Scalar& b) { return eq(a, wrap_scalar(b, a)); }
Tensor ne(const Tensor& a, const Scalar& b) { return ne(a, wrap_scalar(b, a)); }
Tensor lt(const Tensor& a, const Scalar& b) { return lt(a, wrap_scalar(b, a)); }
Tensor le(const Tensor& a, const Scalar& b) { return le(a, wrap_scalar(b, a)); }
Tensor gt(const Tensor& a, const Scalar& b) { return gt(a, wrap_scalar(b, a)); }
Tensor ge(const Tensor& a, const Scalar& b) { return ge(a, wrap_scalar(b, a)); }

Tensor logical_and(const Tensor& a, const Tensor& b) { return call1(op_logical_and(), {a, b}); }
Tensor logical_or(const Tensor& a, const Tensor& b) { return call1(op_logical_or(), {a, b}); }
Tensor logical_xor(const Tensor& a, const Tensor& b) { return call1(op_logical_xor(), {a, b}); }
Tensor logical_not(const Tensor& a) { return call1(op_logical_not(), {a}); }

Tensor isnan(const Tensor& x) { return call1(op_isnan(), {x}); }
Tensor isinf(const Tensor& x) { return call1(op_isinf(), {x}); }
Tensor isfinite(const Tensor& x) { return call1(op_isfinite(), {x}); }

// Composites of the ops above, PyTorch's formula: equal values (infinities included) are close;
// otherwise the error must be finite and within atol + rtol * |b|.
Tensor isclose(const Tensor& a, const Tensor& b, CloseOptions options) {
  ATH_CHECK(options.rtol >= 0, ValueError, "isclose: rtol must be >= 0, got {}", options.rtol);
  ATH_CHECK(options.atol >= 0, ValueError, "isclose: atol must be >= 0, got {}", options.atol);
  Tensor a64 = a.to(kFloat64), b64 = b.to(kFloat64);
  Tensor close = eq(a64, b64);
  if (options.equal_nan) close = logical_or(close, logical_and(isnan(a64), isnan(b64)));
  Tensor error = abs(a64 - b64);
  Tensor allowed = abs(b64) * options.rtol + options.atol;
  return logical_or(close, logical_and(isfinite(error), le(error, allowed)));
}

bool allclose(const Tensor& a, const Tensor& b, CloseOptions options) {
  return all(isclose(a, b, options)).item<bool>();
}

bool equal(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && all(eq(a, b)).item<bool>();
}

}  // namespace ath
