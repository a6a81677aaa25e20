// Activations and softmax. GELU is written as ONNX's own erf / tanh formula (the Gelu op only
// arrived in opset 20), so any runtime computes it from Erf or Tanh.
#include <cmath>
#include <numbers>

#include "athanor/ops/activations.h"
#include "athanor/ops/nn_functional.h"
#include "emitters.h"

namespace ath::onnx::detail {

namespace {

void emit_relu(EmitContext& c) { c.add("Relu", {c.in(0)}, {c.out(0)}); }

void emit_leaky_relu(EmitContext& c) {
  attr_f(c.add("LeakyRelu", {c.in(0)}, {c.out(0)}), "alpha",
         c.attrs<LeakyReluAttrs>().negative_slope);
}

// elu(x) * scale: Elu, or Selu when scaled (selu = scale * elu(x, alpha)).
void emit_elu(EmitContext& c) {
  const EluAttrs& a = c.attrs<EluAttrs>();
  if (a.scale == 1) {
    attr_f(c.add("Elu", {c.in(0)}, {c.out(0)}), "alpha", a.alpha);
    return;
  }
  ::onnx::NodeProto& n = c.add("Selu", {c.in(0)}, {c.out(0)});
  attr_f(n, "alpha", a.alpha);
  attr_f(n, "gamma", a.scale);
}

// erf: x * 0.5 * (1 + erf(x / sqrt(2))); tanh: x * 0.5 * (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
void emit_gelu(EmitContext& c) {
  const DType t = c.out_meta(0).dtype;
  const std::string x = c.in(0);
  std::string inner;
  if (c.attrs<GeluAttrs>().approximate == GeluApprox::None) {
    inner = c.op("Erf", {c.op("Div", {x, c.scalar(std::numbers::sqrt2, t)})});
  } else {
    const std::string cube = c.op("Mul", {c.op("Mul", {x, x}), x});
    const std::string sum = c.op("Add", {x, c.op("Mul", {cube, c.scalar(0.044715, t)})});
    inner = c.op("Tanh", {c.op("Mul", {sum, c.scalar(std::sqrt(2.0 / std::numbers::pi), t)})});
  }
  const std::string half_x = c.op("Mul", {x, c.scalar(0.5, t)});
  c.add("Mul", {half_x, c.op("Add", {inner, c.scalar(1, t)})}, {c.out(0)});
}

void emit_silu(EmitContext& c) {
  const std::string x = c.in(0);
  c.add("Mul", {x, c.op("Sigmoid", {x})}, {c.out(0)});
}

void emit_mish(EmitContext& c) {
  const std::string x = c.in(0);
  c.add("Mul", {x, c.op("Tanh", {c.op("Softplus", {x})})}, {c.out(0)});
}

// log(1 + exp(beta x)) / beta. The threshold (linear above it) differs from Softplus by less
// than exp(-threshold) relative, below float precision at the default 20.
void emit_softplus(EmitContext& c) {
  const SoftplusAttrs& a = c.attrs<SoftplusAttrs>();
  if (a.threshold < 15) c.unsupported("softplus with a threshold below 15");
  const DType t = c.out_meta(0).dtype;
  if (a.beta == 1) {
    c.add("Softplus", {c.in(0)}, {c.out(0)});
    return;
  }
  const std::string sp = c.op("Softplus", {c.op("Mul", {c.in(0), c.scalar(a.beta, t)})});
  c.add("Div", {sp, c.scalar(a.beta, t)}, {c.out(0)});
}

void emit_hardtanh(EmitContext& c) {
  const HardtanhAttrs& a = c.attrs<HardtanhAttrs>();
  const DType t = c.out_meta(0).dtype;
  c.add("Clip", {c.in(0), c.scalar(a.min_val.to_double(), t), c.scalar(a.max_val.to_double(), t)},
        {c.out(0)});
}

void emit_hardsigmoid(EmitContext& c) {
  ::onnx::NodeProto& n = c.add("HardSigmoid", {c.in(0)}, {c.out(0)});
  attr_f(n, "alpha", 1.0 / 6);
  attr_f(n, "beta", 0.5);
}

void emit_hardswish(EmitContext& c) {
  if (c.opset() >= 14) {
    c.add("HardSwish", {c.in(0)}, {c.out(0)});
    return;
  }
  ::onnx::NodeProto* n = nullptr;
  const std::string hs = c.op("HardSigmoid", {c.in(0)}, &n);
  attr_f(*n, "alpha", 1.0 / 6);
  attr_f(*n, "beta", 0.5);
  c.add("Mul", {c.in(0), hs}, {c.out(0)});
}

template <bool Log>
void emit_softmax(EmitContext& c) {
  const DType t = c.out_meta(0).dtype;
  attr_i(c.add(Log ? "LogSoftmax" : "Softmax", {c.in_as(0, t)}, {c.out(0)}), "axis",
         c.attrs<SoftmaxAttrs>().dim);
}

}  // namespace

void add_activation_emitters(EmitTable& t) {
  t[&op_relu()] = {emit_relu};
  t[&op_leaky_relu()] = {emit_leaky_relu};
  t[&op_elu()] = {emit_elu};
  t[&op_gelu()] = {emit_gelu};
  t[&op_silu()] = {emit_silu};
  t[&op_mish()] = {emit_mish};
  t[&op_softplus()] = {emit_softplus};
  t[&op_hardtanh()] = {emit_hardtanh};
  t[&op_hardsigmoid()] = {emit_hardsigmoid};
  t[&op_hardswish()] = {emit_hardswish};
  t[&op_softmax()] = {emit_softmax<false>};
  t[&op_log_softmax()] = {emit_softmax<true>};
}

}  // namespace ath::onnx::detail
