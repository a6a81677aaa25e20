// The elementwise losses (mse_loss, l1_loss, smooth_l1_loss, huber_loss, binary_cross_entropy,
// binary_cross_entropy_with_logits, kl_div) and their backward ops: definitions, the double
// backward in registered ops, and the public functions.
//
// Each forward op computes the loss of every element and reduces it in one kernel pass; its
// backward op returns (dx, dy) = g / divisor * (dL/dx, dL/dy) in one pass. The backward op's
// own gradient uses the loss's elementwise Hessian (xx, xy, yy), written below per loss.
#include "athanor/ops/comparison.h"
#include "athanor/ops/creation.h"
#include "athanor/ops/dispatch.h"
#include "athanor/ops/pointwise.h"
#include "athanor/ops/reduction.h"
#include "athanor/ops/views.h"
#include "loss_checks.h"

namespace ath {

namespace {

enum class Kind { Mse, L1, SmoothL1, Huber, Bce, BceLogits, KlDiv };

constexpr int num_loss_inputs(Kind k) {
  return k == Kind::Bce ? 3 : k == Kind::BceLogits ? 4 : 2;  // x, y[, weight[, pos_weight]]
}

template <Kind K>
const Op<PointwiseLossAttrs>& backward_op() {
  if constexpr (K == Kind::Mse) return op_mse_loss_backward();
  if constexpr (K == Kind::L1) return op_l1_loss_backward();
  if constexpr (K == Kind::SmoothL1) return op_smooth_l1_loss_backward();
  if constexpr (K == Kind::Huber) return op_huber_loss_backward();
  if constexpr (K == Kind::Bce) return op_binary_cross_entropy_backward();
  if constexpr (K == Kind::BceLogits) return op_binary_cross_entropy_with_logits_backward();
  if constexpr (K == Kind::KlDiv) return op_kl_div_backward();
}

template <Kind K>
void check_attrs(const PointwiseLossAttrs& a) {
  detail::check_reduction(a.reduction, /*allow_batchmean=*/K == Kind::KlDiv);
  if constexpr (K == Kind::SmoothL1) {
    ATH_CHECK(a.param >= 0, ValueError, "does not support negative values for beta, got {}",
              a.param);
  }
  if constexpr (K == Kind::Huber) {
    ATH_CHECK(a.param > 0, ValueError, "does not support non-positive values for delta, got {}",
              a.param);
  }
}

// x, y (one shape, floating) and the optional weights at in[first..]. Returns the kernel dtype.
template <Kind K>
DType check_operands(TensorSpan in, std::size_t first, const PointwiseLossAttrs& a) {
  const Tensor &x = in[first], &y = in[first + 1];
  ATH_CHECK(is_floating(x.dtype()) && is_floating(y.dtype()), DTypeError,
            "expected floating input and target, got {} and {}", dtype_name(x.dtype()),
            dtype_name(y.dtype()));
  ATH_CHECK(x.shape() == y.shape(), ShapeError, "target size {} is different to the input size {}",
            to_string(y.shape()), to_string(x.shape()));
  if constexpr (num_loss_inputs(K) >= 3) {
    detail::check_broadcast_weight(in[first + 2], a.has_weight, "weight", x.shape());
  }
  if constexpr (num_loss_inputs(K) >= 4) {
    detail::check_broadcast_weight(in[first + 3], a.has_pos_weight, "pos_weight", x.shape());
  }
  return promote_types(x.dtype(), y.dtype());
}

template <Kind K>
OutputSpec forward_spec(TensorSpan in, const PointwiseLossAttrs& a) {
  check_attrs<K>(a);
  DType t = check_operands<K>(in, 0, a);
  return OutputSpec{{{detail::loss_shape(a.reduction, in[0].shape()), t}}, t};
}

// Inputs g, x, y[, weight[, pos_weight]]. Outputs dx, dy ([0] where grad_mask is off).
template <Kind K>
OutputSpec backward_spec(TensorSpan in, const PointwiseLossAttrs& a) {
  check_attrs<K>(a);
  DType t = promote_types(check_operands<K>(in, 1, a), in[0].dtype());
  const Shape& xs = in[1].shape();
  Shape gs = detail::loss_shape(a.reduction, xs);
  ATH_CHECK(in[0].shape() == gs, ShapeError, "expected a loss gradient of shape {}, got {}",
            to_string(gs), to_string(in[0].shape()));
  return OutputSpec{{{a.grad_mask[0] ? xs : Shape{0}, t}, {a.grad_mask[1] ? xs : Shape{0}, t}}, t};
}

// The optional weights of a loss's inputs, undefined when absent.
template <Kind K>
std::pair<Tensor, Tensor> weights(BackwardContext& ctx, int first, const PointwiseLossAttrs& a) {
  Tensor w, pw;
  if (num_loss_inputs(K) >= 3 && a.has_weight) w = ctx.input(first + 2);
  if (num_loss_inputs(K) >= 4 && a.has_pos_weight) pw = ctx.input(first + 3);
  return {w, pw};
}

template <Kind K>
void forward_grad(BackwardContext& ctx, const PointwiseLossAttrs& a) {
  PointwiseLossAttrs b = a;
  b.grad_mask = {ctx.needs_grad(0), ctx.needs_grad(1)};
  if (!b.grad_mask[0] && !b.grad_mask[1]) return;
  std::vector<Tensor> in{ctx.grad_output(0)};
  for (int i = 0; i < num_loss_inputs(K); ++i) in.push_back(ctx.input(i));
  Outputs d = call(backward_op<K>(), in, b);
  for (int i = 0; i < 2; ++i) {
    if (b.grad_mask[i]) ctx.set_grad_input(i, d[i]);
  }
}

// d2L/dx2, d2L/dxdy, d2L/dy2 elementwise (weights included); undefined = 0.
struct Hessian {
  Tensor xx, xy, yy;
};

template <Kind K>
Hessian hessian(const Tensor& x, const Tensor& y, const Tensor& w, const Tensor& pw,
                const PointwiseLossAttrs& a) {
  auto c = [&](double v) { return scalar_tensor(v, x.dtype()); };
  Hessian h;
  if constexpr (K == Kind::Mse) {
    h = {c(2), c(-2), c(2)};
  } else if constexpr (K == Kind::SmoothL1 || K == Kind::Huber) {
    if (a.param > 0) {  // smooth_l1 with beta = 0 is l1: zero almost everywhere
      Tensor in = lt(abs(x - y), a.param).to(x.dtype());
      if (K == Kind::SmoothL1) in = in / a.param;
      h = {in, -in, in};
    }
  } else if constexpr (K == Kind::Bce) {
    // torch's binary_cross_entropy_double_backward: the denominators carry its epsilon.
    constexpr double kEps = 1e-12;
    h.xx = (x * x - 2 * x * y + y) / (pow(x + kEps, 2) * pow(1 - x + kEps, 2));
    h.xy = -reciprocal(clamp_min(x * (1 - x), kEps));
  } else if constexpr (K == Kind::BceLogits) {
    Tensor s = sigmoid(x);
    if (pw.defined()) {
      h.xx = (pw * y + 1 - y) * s * (1 - s);
      h.xy = (pw - 1) * s - pw;
    } else {
      h.xx = s * (1 - s);
      h.xy = c(-1);
    }
  } else if constexpr (K == Kind::KlDiv) {
    if (a.log_target) {
      Tensor e = exp(y);
      h.xy = -e;
      h.yy = e * (y - x + 2);
    } else {
      h.xy = c(-1);
      h.yy = reciprocal(y);
    }
  }
  if (w.defined()) {
    for (Tensor* t : {&h.xx, &h.xy, &h.yy}) {
      if (t->defined()) *t = *t * w;
    }
  }
  return h;
}

double inverse_divisor(Reduction r, const Shape& x) {
  if (r == Reduction::Mean) return 1.0 / static_cast<double>(numel(x));
  if (r == Reduction::BatchMean) return x.empty() ? 1.0 : 1.0 / static_cast<double>(x[0]);
  return 1.0;
}

// acc += a * b, where an undefined a or b is zero.
void add_product(Tensor& acc, const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined()) return;
  Tensor p = a * b;
  acc = acc.defined() ? acc + p : p;
}

template <Kind K>
void backward_grad(BackwardContext& ctx, const PointwiseLossAttrs& a) {
  const Tensor &g = ctx.input(0), &x = ctx.input(1), &y = ctx.input(2);
  auto [w, pw] = weights<K>(ctx, 1, a);
  Tensor hx, hy;  // upstream gradients of dx, dy (undefined: none flowed)
  if (a.grad_mask[0] && ctx.grad_output_defined(0)) hx = ctx.grad_output(0);
  if (a.grad_mask[1] && ctx.grad_output_defined(1)) hy = ctx.grad_output(1);
  if (!hx.defined() && !hy.defined()) return;
  if (ctx.needs_grad(0)) {  // (dx, dy) are linear in g: contract h with the g = 1 outputs
    PointwiseLossAttrs u = a;
    u.grad_mask = {hx.defined(), hy.defined()};
    std::vector<Tensor> in{ones_like(g)};
    for (int i = 1; i <= num_loss_inputs(K); ++i) in.push_back(ctx.input(i));
    Outputs unit = call(backward_op<K>(), in, u);
    Tensor s;
    add_product(s, hx, unit[0]);
    add_product(s, hy, unit[1]);
    ctx.set_grad_input(0, g.dim() == 0 ? sum(s) : s);
  }
  if (!ctx.needs_grad(1) && !ctx.needs_grad(2)) return;
  Hessian h = hessian<K>(x, y, w, pw, a);
  Tensor scale = g * inverse_divisor(a.reduction, x.shape());
  for (int i = 1; i <= 2; ++i) {
    if (!ctx.needs_grad(i)) continue;
    Tensor acc;
    add_product(acc, hx, i == 1 ? h.xx : h.xy);
    add_product(acc, hy, i == 1 ? h.xy : h.yy);
    ctx.set_grad_input(i, acc.defined() ? scale * acc : zeros_like(x));
  }
}

template <Kind K>
const Op<PointwiseLossAttrs>& define_forward(const char* name) {
  constexpr int n = num_loss_inputs(K);
  return define_op<PointwiseLossAttrs>({
      .name = name,
      .kind = OpKind::Opaque,
      .num_inputs = n,
      .autocast = AutocastPolicy::Float32,
      .save_inputs = (1u << n) - 1,
      .infer = &forward_spec<K>,
      .backward = &forward_grad<K>,
  });
}

template <Kind K>
const Op<PointwiseLossAttrs>& define_backward(const char* name) {
  constexpr int n = num_loss_inputs(K) + 1;
  return define_op<PointwiseLossAttrs>({
      .name = name,
      .kind = OpKind::Opaque,
      .num_inputs = n,
      .num_outputs = 2,
      .save_inputs = (1u << n) - 1,
      .infer = &backward_spec<K>,
      .backward = &backward_grad<K>,
  });
}

// Calls a forward op on input and target (broadcast to one shape when `broadcast`; otherwise
// the shape rule refuses different shapes, as torch's binary_cross_entropy* do).
Tensor run(const Op<PointwiseLossAttrs>& op, Tensor x, Tensor y, const PointwiseLossAttrs& a,
           bool broadcast, const Tensor& w = {}, const Tensor& pw = {}) {
  if (broadcast && x.defined() && y.defined() && x.shape() != y.shape()) {
    Shape s = with_op_context(op, [&] { return broadcast_shapes(x.shape(), y.shape()); });
    x = x.expand(s);
    y = y.expand(s);
  }
  std::vector<Tensor> in{x, y};
  if (op.num_inputs >= 3) in.push_back(detail::or_absent(w));
  if (op.num_inputs >= 4) in.push_back(detail::or_absent(pw));
  return std::move(call(op, in, a)[0]);
}

}  // namespace

const Op<PointwiseLossAttrs>& op_mse_loss() {
  static const auto& op = define_forward<Kind::Mse>("mse_loss");
  return op;
}
const Op<PointwiseLossAttrs>& op_mse_loss_backward() {
  static const auto& op = define_backward<Kind::Mse>("mse_loss_backward");
  return op;
}
const Op<PointwiseLossAttrs>& op_l1_loss() {
  static const auto& op = define_forward<Kind::L1>("l1_loss");
  return op;
}
const Op<PointwiseLossAttrs>& op_l1_loss_backward() {
  static const auto& op = define_backward<Kind::L1>("l1_loss_backward");
  return op;
}
const Op<PointwiseLossAttrs>& op_smooth_l1_loss() {
  static const auto& op = define_forward<Kind::SmoothL1>("smooth_l1_loss");
  return op;
}
const Op<PointwiseLossAttrs>& op_smooth_l1_loss_backward() {
  static const auto& op = define_backward<Kind::SmoothL1>("smooth_l1_loss_backward");
  return op;
}
const Op<PointwiseLossAttrs>& op_huber_loss() {
  static const auto& op = define_forward<Kind::Huber>("huber_loss");
  return op;
}
const Op<PointwiseLossAttrs>& op_huber_loss_backward() {
  static const auto& op = define_backward<Kind::Huber>("huber_loss_backward");
  return op;
}
const Op<PointwiseLossAttrs>& op_binary_cross_entropy() {
  static const auto& op = define_forward<Kind::Bce>("binary_cross_entropy");
  return op;
}
const Op<PointwiseLossAttrs>& op_binary_cross_entropy_backward() {
  static const auto& op = define_backward<Kind::Bce>("binary_cross_entropy_backward");
  return op;
}
const Op<PointwiseLossAttrs>& op_binary_cross_entropy_with_logits() {
  static const auto& op = define_forward<Kind::BceLogits>("binary_cross_entropy_with_logits");
  return op;
}
const Op<PointwiseLossAttrs>& op_binary_cross_entropy_with_logits_backward() {
  static const auto& op =
      define_backward<Kind::BceLogits>("binary_cross_entropy_with_logits_backward");
  return op;
}
const Op<PointwiseLossAttrs>& op_kl_div() {
  static const auto& op = define_forward<Kind::KlDiv>("kl_div");
  return op;
}
const Op<PointwiseLossAttrs>& op_kl_div_backward() {
  static const auto& op = define_backward<Kind::KlDiv>("kl_div_backward");
  return op;
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  return run(op_mse_loss(), input, target, {.reduction = reduction}, true);
}

Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  return run(op_l1_loss(), input, target, {.reduction = reduction}, true);
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const SmoothL1LossOptions& o) {
  return run(op_smooth_l1_loss(), input, target, {.reduction = o.reduction, .param = o.beta}, true);
}

Tensor huber_loss(const Tensor& input, const Tensor& target, const HuberLossOptions& o) {
  return run(op_huber_loss(), input, target, {.reduction = o.reduction, .param = o.delta}, true);
}

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const BceLossOptions& o) {
  return run(op_binary_cross_entropy(), input, target,
             {.reduction = o.reduction, .has_weight = o.weight.defined()}, false, o.weight);
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BceWithLogitsLossOptions& o) {
  return run(op_binary_cross_entropy_with_logits(), input, target,
             {.reduction = o.reduction,
              .has_weight = o.weight.defined(),
              .has_pos_weight = o.pos_weight.defined()},
             false, o.weight, o.pos_weight);
}

Tensor kl_div(const Tensor& input, const Tensor& target, const KlDivLossOptions& o) {
  PointwiseLossAttrs a{.reduction = o.reduction, .log_target = o.log_target};
  if (o.reduction == Reduction::BatchMean && input.defined() && target.defined() &&
      input.shape() != target.shape()) {
    // torch divides by the *input's* size(0), which broadcasting may have moved.
    a.reduction = Reduction::Sum;
    Tensor s = run(op_kl_div(), input, target, a, true);
    return input.dim() == 0 ? s : s / static_cast<double>(input.shape()[0]);
  }
  return run(op_kl_div(), input, target, a, true);
}

}  // namespace ath
