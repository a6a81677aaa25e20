// Building blocks shared by the pointwise op definitions: the dtype rules of unary ops, a
// one-call definition of a unary op, and the masks backward formulas multiply by in place of
// `where` (a bool mask converted to the gradient's dtype).
#pragma once

#include "athanor/ops/activations.h"
#include "athanor/ops/comparison.h"
#include "athanor/ops/creation.h"
#include "athanor/ops/dispatch.h"
#include "athanor/ops/pointwise.h"
#include "athanor/ops/reduction.h"

namespace ath::detail {

// Which input dtypes a unary op takes and what it returns.
enum class UnaryRule {
  FloatResult,   // any dtype; bool/integers compute in float32 (exp, sin, ...)
  SameNumeric,   // keeps the dtype; bool refused (abs, floor, relu, ...)
  SameAll,       // keeps the dtype, bool included (sign)
  SameFloating,  // keeps the dtype; floating only (activations)
};

TensorMeta unary_result(const Tensor& x, UnaryRule rule);

template <UnaryRule R, class A>
OutputSpec unary_spec(TensorSpan in, const A&) {
  TensorMeta m = unary_result(in[0], R);
  return OutputSpec{{m}, m.dtype};
}

// Save masks of a unary op: backward reads its input x / its result.
inline constexpr uint32_t kSaveX = 1;
inline constexpr uint32_t kSaveResult = 1;

// Everything but the name and the formula is the same for the plain unary ops.
struct UnaryDef {
  std::string name;
  UnaryRule rule = UnaryRule::FloatResult;
  uint32_t save_inputs = 0;   // bit 0: backward reads x
  uint32_t save_outputs = 0;  // bit 0: backward reads the result
  OpSpec<NoAttrs>::BackwardFn backward = nullptr;
  AutocastPolicy autocast = AutocastPolicy::None;
};
const Op<NoAttrs>& define_unary(UnaryDef def);

// Backward of an op whose result is piecewise constant (sign, floor, ...): zeros, as torch.
void zero_backward(BackwardContext& ctx);

// A bool mask as 0/1 in `like`'s dtype. Backward formulas multiply by masks instead of
// selecting, so both sides of a kink must stay finite (0 * inf would leak NaN).
Tensor as_float(const Tensor& mask, const Tensor& like);

}  // namespace ath::detail
