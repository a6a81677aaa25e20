// Deterministic factories: arange, linspace, eye. Registered as 0-input ops (not
// differentiable) so a tracer records them; their shapes come from the attributes.
#include "athanor/ops/creation.h"

#include <cmath>

#include "athanor/ops/dispatch.h"

namespace ath {

const Op<ArangeAttrs>& op_arange() {
  static const auto& op = define_op<ArangeAttrs>({
      .name = "arange",
      .kind = OpKind::Opaque,
      .num_inputs = 0,
      .infer =
          [](TensorSpan, const ArangeAttrs& a) {
            ATH_CHECK(a.size >= 0 && a.size <= (int64_t{1} << 56), ValueError,
                      "invalid number of elements {}", a.size);
            ATH_CHECK(a.dtype != kBool, DTypeError, "bool is not supported");
            return OutputSpec{{{Shape{a.size}, a.dtype}}, a.dtype};
          },
      .not_differentiable = "a factory: no tensor inputs",
  });
  return op;
}

const Op<LinspaceAttrs>& op_linspace() {
  static const auto& op = define_op<LinspaceAttrs>({
      .name = "linspace",
      .kind = OpKind::Opaque,
      .num_inputs = 0,
      .infer =
          [](TensorSpan, const LinspaceAttrs& a) {
            ATH_CHECK(a.steps >= 0, ValueError, "number of steps must be non-negative, got {}",
                      a.steps);
            ATH_CHECK(a.dtype != kBool, DTypeError, "bool is not supported");
            return OutputSpec{{{Shape{a.steps}, a.dtype}}, a.dtype};
          },
      .not_differentiable = "a factory: no tensor inputs",
  });
  return op;
}

const Op<EyeAttrs>& op_eye() {
  static const auto& op = define_op<EyeAttrs>({
      .name = "eye",
      .kind = OpKind::Opaque,
      .num_inputs = 0,
      .infer =
          [](TensorSpan, const EyeAttrs& a) {
            ATH_CHECK(a.n >= 0 && a.m >= 0, ValueError, "n and m must be non-negative, got {}, {}",
                      a.n, a.m);
            return OutputSpec{{{Shape{a.n, a.m}, a.dtype}}, a.dtype};
          },
      .not_differentiable = "a factory: no tensor inputs",
  });
  return op;
}

Tensor arange(const Scalar& end) { return arange(0, end, 1); }

Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step,
              std::optional<DType> dtype) {
  ArangeAttrs a = with_op_context(op_arange(), [&] {
    bool all_int = !start.is_floating() && !end.is_floating() && !step.is_floating();
    DType t = dtype.value_or(all_int ? kInt64 : kFloat32);
    ATH_CHECK(t != kBool, DTypeError, "bool is not supported");
    // As torch: the checks see the bounds converted to the accumulate type (int64 for integer
    // dtypes: arange(0, 5, 0.5, int64) has step 0), the size uses doubles except for int64.
    double s, e, st;
    if (is_floating(t)) {
      s = start.to_double(), e = end.to_double(), st = step.to_double();
    } else {
      s = double(start.to<int64_t>()), e = double(end.to<int64_t>()),
      st = double(step.to<int64_t>());
    }
    ATH_CHECK(std::isfinite(s) && std::isfinite(e), ValueError, "unsupported range: {} -> {}", s,
              e);
    ATH_CHECK(st != 0, ValueError, "step must be nonzero");
    ATH_CHECK((st > 0 && e >= s) || (st < 0 && e <= s), ValueError,
              "upper bound and lower bound inconsistent with step sign: start {}, end {}, step {}",
              s, e, st);
    double size = t == kInt64
                      ? std::ceil(static_cast<double>(end.to<int64_t>() - start.to<int64_t>()) /
                                  static_cast<double>(step.to<int64_t>()))
                      : std::ceil((end.to_double() - start.to_double()) / step.to_double());
    // Bounded so the byte count can't overflow (no machine holds 2^56 elements anyway).
    ATH_CHECK(size >= 0 && size <= 0x1p56, ValueError, "invalid number of elements {}", size);
    return ArangeAttrs{
        .start = start, .step = step, .size = static_cast<int64_t>(size), .dtype = t};
  });
  return call1(op_arange(), TensorSpan(), a);
}

Tensor linspace(double start, double end, int64_t steps, DType dtype) {
  return call1(op_linspace(), TensorSpan(),
               LinspaceAttrs{.start = start, .end = end, .steps = steps, .dtype = dtype});
}

Tensor eye(int64_t n, std::optional<int64_t> m, DType dtype) {
  return call1(op_eye(), TensorSpan(), EyeAttrs{.n = n, .m = m.value_or(n), .dtype = dtype});
}

}  // namespace ath
