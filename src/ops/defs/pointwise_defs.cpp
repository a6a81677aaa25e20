// Dtype rules shared by pointwise ops (torch.result_type and the unary rules) and the helpers
// behind define_unary and the masked backward formulas.
#include "pointwise_defs.h"

#include <optional>

#include "athanor/ops/copy.h"

namespace ath {

namespace {
// torch's combine_categories: a lower-priority operand (0-dim tensor) only matters when it is of
// a higher category than the higher-priority one (dimensioned tensors).
std::optional<DType> combine(std::optional<DType> higher, std::optional<DType> lower) {
  if (!higher) return lower;
  if (!lower || is_floating(*higher)) return higher;
  if (*higher == kBool || is_floating(*lower)) return promote_types(*higher, *lower);
  return higher;
}
}  // namespace

DType result_type(TensorSpan tensors) {
  std::optional<DType> dimmed, zero_dim;
  for (const Tensor& t : tensors) {
    std::optional<DType>& slot = t.dim() > 0 ? dimmed : zero_dim;
    slot = slot ? promote_types(*slot, t.dtype()) : t.dtype();
  }
  return combine(dimmed, zero_dim).value_or(kFloat32);
}

namespace detail {

TensorMeta unary_result(const Tensor& x, UnaryRule rule) {
  const DType t = x.dtype();
  switch (rule) {
    case UnaryRule::FloatResult:
      return {x.shape(), is_floating(t) ? t : kFloat32};
    case UnaryRule::SameNumeric:
      ATH_CHECK(t != kBool, DTypeError, "not implemented for bool tensors");
      break;
    case UnaryRule::SameAll:
      break;
    case UnaryRule::SameFloating:
      ATH_CHECK(is_floating(t), DTypeError, "expected a floating tensor, got {}", dtype_name(t));
      break;
  }
  return {x.shape(), t};
}

const Op<NoAttrs>& define_unary(UnaryDef def) {
  OpSpec<NoAttrs> spec{
      .name = std::move(def.name),
      .kind = OpKind::Pointwise,
      .inplace = InplacePolicy::OverInput0,
      .autocast = def.autocast,
      .save_inputs = def.save_inputs,
      .save_outputs = def.save_outputs,
      .backward = def.backward,
  };
  switch (def.rule) {
    case UnaryRule::FloatResult:
      spec.infer = unary_spec<UnaryRule::FloatResult, NoAttrs>;
      break;
    case UnaryRule::SameNumeric:
      spec.infer = unary_spec<UnaryRule::SameNumeric, NoAttrs>;
      break;
    case UnaryRule::SameAll:
      spec.infer = unary_spec<UnaryRule::SameAll, NoAttrs>;
      break;
    case UnaryRule::SameFloating:
      spec.infer = unary_spec<UnaryRule::SameFloating, NoAttrs>;
      break;
  }
  return define_op<NoAttrs>(std::move(spec));
}

void zero_backward(BackwardContext& ctx) {
  const TensorMeta& m = ctx.input_meta(0);
  ctx.set_grad_input(0, zeros(m.shape, m.dtype));
}

Tensor as_float(const Tensor& mask, const Tensor& like) { return mask.to(like.dtype()); }

}  // namespace detail
}  // namespace ath
