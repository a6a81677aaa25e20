// ONNX activations, Softmax/LogSoftmax (axis semantics before and after opset 13) and Dropout
// (inference: the identity).
#include "athanor/ops/activations.h"

#include <cmath>

#include "../op_table.h"
#include "athanor/ops/comparison.h"
#include "athanor/ops/copy.h"
#include "athanor/ops/creation.h"
#include "athanor/ops/indexing.h"
#include "athanor/ops/nn_functional.h"
#include "athanor/ops/pointwise.h"
#include "athanor/ops/reduction.h"
#include "athanor/ops/views.h"

namespace ath::onnx::detail {

namespace {

void lower_relu(NodeContext& c) { c.out(0, relu(c.in(0))); }
void lower_leaky_relu(NodeContext& c) {
  c.out(0, leaky_relu(c.in(0), c.attr_float("alpha", 0.01)));
}
void lower_elu(NodeContext& c) { c.out(0, elu(c.in(0), c.attr_float("alpha", 1.0))); }

// Selu and Celu are elu with a scale (Selu) or a rescaled input (Celu).
void lower_selu(NodeContext& c) {
  const double alpha = c.attr_float("alpha", 1.67326319217681884765625);
  const double gamma = c.attr_float("gamma", 1.05070102214813232421875);
  c.out(0, mul(elu(c.in(0), alpha), gamma));
}
void lower_celu(NodeContext& c) {
  const double alpha = c.attr_float("alpha", 1.0);
  // max(0,x) + min(0, alpha*(exp(x/alpha)-1)) = alpha * elu(x / alpha)
  c.out(0, mul(elu(div(c.in(0), alpha), 1.0), alpha));
}
void lower_prelu(NodeContext& c) {
  const Tensor& x = c.in(0);
  Tensor slope = c.in(1);
  // Before opset 7 a 1-D slope of C values applies along the channel dim (dim 1).
  if (c.opset() < 7 && slope.dim() == 1 && x.dim() >= 2 && slope.size(0) == x.size(1) &&
      slope.numel() > 1) {
    Shape s(static_cast<std::size_t>(x.dim() - 1), 1);
    s[0] = slope.size(0);
    slope = reshape(slope, s);
  }
  c.out(0, where(lt(x, Scalar(0)), mul(x, slope), x));
}
void lower_thresholded_relu(NodeContext& c) {
  const Tensor& x = c.in(0);
  c.out(0, where(gt(x, Scalar(c.attr_float("alpha", 1.0))), x, zeros_like(x)));
}
void lower_hard_sigmoid(NodeContext& c) {
  const double alpha = c.attr_float("alpha", 0.2), beta = c.attr_float("beta", 0.5);
  c.out(0, clamp(add(mul(c.in(0), alpha), beta), std::optional<Scalar>(0.0),
                 std::optional<Scalar>(1.0)));
}
void lower_hard_swish(NodeContext& c) { c.out(0, hardswish(c.in(0))); }
void lower_softplus(NodeContext& c) {
  // log(1 + exp(x)), without torch's linear threshold (exp overflows only where log1p(exp(x))
  // equals x to float precision anyway: threshold 20 is within float32 rounding).
  c.out(0, softplus(c.in(0), 1.0, 20.0));
}
void lower_softsign(NodeContext& c) {
  const Tensor& x = c.in(0);
  c.out(0, div(x, add(abs(x), 1.0)));
}
void lower_shrink(NodeContext& c) {
  const Tensor& x = c.in(0);
  const double bias = c.attr_float("bias", 0.0), lambd = c.attr_float("lambd", 0.5);
  Tensor zero = zeros_like(x);
  Tensor y = where(lt(x, Scalar(-lambd)), add(x, Scalar(bias)), zero);
  y = where(gt(x, Scalar(lambd)), sub(x, Scalar(bias)), y);
  c.out(0, like_type(y, x));
}

// Softmax family. Before opset 13 the input is seen as 2-D, [prod(shape[:axis]),
// prod(shape[axis:])], and normalized over the second dimension (axis default 1); from 13 on,
// over one axis (default -1).
template <bool Log>
void lower_softmax(NodeContext& c) {
  const Tensor& x = c.in(0);
  const int64_t rank = x.dim();
  if (c.opset() >= 13) {
    const int64_t axis = c.axis(c.attr_int("axis", -1), rank);
    c.out(0, Log ? log_softmax(x, axis) : softmax(x, axis));
    return;
  }
  const int64_t axis = c.axis(c.attr_int("axis", 1), rank);
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.size(d);
  const int64_t inner = rank == 0 ? 1 : x.numel() / std::max<int64_t>(outer, 1);
  Tensor flat = reshape(x, {outer, inner});
  Tensor y = Log ? log_softmax(flat, 1) : softmax(flat, 1);
  c.out(0, reshape(y, x.shape()));
}

// Hardmax: 1 at the first maximum along the axis (opset < 13: of the flattened 2-D view).
void lower_hardmax(NodeContext& c) {
  const Tensor& x = c.in(0);
  const int64_t rank = x.dim();
  Tensor v = x;
  int64_t axis = 0;
  if (c.opset() >= 13) {
    axis = c.axis(c.attr_int("axis", -1), rank);
  } else {
    const int64_t a = c.axis(c.attr_int("axis", 1), rank);
    int64_t outer = 1;
    for (int64_t d = 0; d < a; ++d) outer *= x.size(d);
    v = reshape(x, {outer, x.numel() / std::max<int64_t>(outer, 1)});
    axis = 1;
  }
  Tensor idx = argmax(v, axis, true);
  Tensor pos = reshape(arange(Scalar(v.size(axis))), [&] {
    Shape s(static_cast<std::size_t>(v.dim()), 1);
    s[static_cast<std::size_t>(axis)] = v.size(axis);
    return s;
  }());
  c.out(0, reshape(to_dtype(eq(pos, idx), x.dtype()), x.shape()));
}

void lower_dropout(NodeContext& c) {
  // Inference: the identity (training_mode, opset 12's third input, must be false).
  // Training mode drops at random, which a replay could not reproduce; with ratio 0 it keeps
  // everything, as inference does.
  if (c.opset() >= 12 && c.has(2) && c.ints(2).at(0) != 0 &&
      !(c.has(1) && c.doubles(1).at(0) == 0.0))
    c.unsupported("Dropout with training_mode=true (inference runs no dropout)");
  const Tensor& x = c.in(0);
  c.out(0, x);
  if (c.wants(1)) c.out(1, ones_like(x, DType::Bool));
}

}  // namespace

void add_activation_ops(OpTable& t) {
  t["Relu"] = {lower_relu, 0, 6, kNumericTypes};
  t["LeakyRelu"] = {lower_leaky_relu, 0, 6, kFloatTypes};
  t["Elu"] = {lower_elu, 0, 6, kFloatTypes};
  t["Selu"] = {lower_selu, 0, 6, kFloatTypes};
  t["Celu"] = {lower_celu, 0, 12, kFloatTypes};
  t["PRelu"] = {lower_prelu, 0, 6, kFloatTypes};
  t["ThresholdedRelu"] = {lower_thresholded_relu, 0, 10, kFloatTypes};
  t["HardSigmoid"] = {lower_hard_sigmoid, 0, 6, kFloatTypes};
  t["HardSwish"] = {lower_hard_swish, 0, 14, kFloatTypes};
  t["Softplus"] = {lower_softplus, 0, 1, kFloatTypes};
  t["Softsign"] = {lower_softsign, 0, 1, kFloatTypes};
  t["Shrink"] = {lower_shrink, 0, 9, kNumericTypes};
  t["Softmax"] = {lower_softmax<false>, 0, 1, kFloatTypes};
  t["LogSoftmax"] = {lower_softmax<true>, 0, 1, kFloatTypes};
  t["Hardmax"] = {lower_hardmax, 0, 1, kFloatTypes};
  // training_mode (input 2) is read on the host.
  t["Dropout"] = {lower_dropout, 0b110, 7, kFloatTypes};
}

}  // namespace ath::onnx::detail
