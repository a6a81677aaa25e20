// cross_entropy (class indices: one fused op) and cross_entropy_backward: definitions and
// gradient formulas; the public cross_entropy, whose class-probability form is composed of
// registered ops (as torch composes it), so it is differentiable in input and target.
#include <limits>

#include "athanor/ops/comparison.h"
#include "athanor/ops/creation.h"
#include "athanor/ops/dispatch.h"
#include "athanor/ops/indexing.h"
#include "athanor/ops/nn_functional.h"
#include "athanor/ops/pointwise.h"
#include "athanor/ops/reduction.h"
#include "athanor/ops/views.h"
#include "loss_checks.h"

namespace ath {

namespace {

void check_attrs(const CrossEntropyAttrs& a) {
  detail::check_reduction(a.reduction);
  ATH_CHECK(a.label_smoothing >= 0 && a.label_smoothing <= 1, ValueError,
            "label_smoothing must be between 0.0 and 1.0, got {}", a.label_smoothing);
}

// Inputs x, target, weight. Outputs loss, lse (per position), total_weight (0-dim).
OutputSpec ce_spec(TensorSpan in, const CrossEntropyAttrs& a) {
  check_attrs(a);
  const Tensor& x = in[0];
  Shape pos = detail::check_class_target(x.shape(), x.dtype(), in[1]);
  detail::check_class_weight(in[2], a.has_weight, x.shape()[detail::class_dim(x.dim())]);
  DType st = detail::stat_dtype(x.dtype());
  return OutputSpec{{{detail::loss_shape(a.reduction, pos), x.dtype()}, {pos, st}, {{}, st}},
                    x.dtype()};
}

// Inputs g, x, target, weight, lse, total_weight. Output dx.
OutputSpec ce_backward_spec(TensorSpan in, const CrossEntropyAttrs& a) {
  check_attrs(a);
  const Tensor &g = in[0], &x = in[1];
  Shape pos = detail::check_class_target(x.shape(), x.dtype(), in[2]);
  detail::check_class_weight(in[3], a.has_weight, x.shape()[detail::class_dim(x.dim())]);
  Shape gs = detail::loss_shape(a.reduction, pos);
  ATH_CHECK(g.shape() == gs, ShapeError, "expected a loss gradient of shape {}, got {}",
            to_string(gs), to_string(g.shape()));
  ATH_CHECK(is_floating(g.dtype()), DTypeError, "expected a floating gradient, got {}",
            dtype_name(g.dtype()));
  DType st = detail::stat_dtype(x.dtype());
  ATH_CHECK(in[4].shape() == pos && in[4].dtype() == st, ShapeError,
            "expected lse of shape {} and dtype {}, got {} {}", to_string(pos), dtype_name(st),
            to_string(in[4].shape()), dtype_name(in[4].dtype()));
  ATH_CHECK(in[5].dim() == 0 && in[5].dtype() == st, ShapeError,
            "expected a 0-dim total_weight of dtype {}, got {} {}", dtype_name(st),
            to_string(in[5].shape()), dtype_name(in[5].dtype()));
  return OutputSpec{{{x.shape(), x.dtype()}}, x.dtype()};
}

// b: the weighted, smoothed one-hot target distribution, x's shape, zero at ignored positions:
// b[c] = mask * w[c] * ((1 - ls) * (c == t) + ls / C). Built from registered ops (double
// backward only).
Tensor target_distribution(const Tensor& target, const Tensor& weight, const CrossEntropyAttrs& a,
                           const Shape& x_shape, DType dtype) {
  const int64_t cd = detail::class_dim(static_cast<int64_t>(x_shape.size()));
  const int64_t classes = x_shape[cd];
  Tensor t = target.to(kInt64);
  Tensor keep = ne(t, a.ignore_index);
  Tensor b = one_hot(where(keep, t, int64_t(0)), classes).to(dtype);
  if (a.label_smoothing > 0) b = b * (1 - a.label_smoothing) + a.label_smoothing / classes;
  if (a.has_weight) b = b * weight.to(dtype);
  b = b * keep.unsqueeze(-1).to(dtype);
  if (b.dim() > 1) {  // classes last -> classes at dim 1
    DimList order{0, b.dim() - 1};
    for (int64_t d = 1; d < b.dim() - 1; ++d) order.push_back(d);
    b = permute(b, order);
  }
  return b;
}

}  // namespace

const Op<CrossEntropyAttrs>& op_cross_entropy() {
  static const auto& op = define_op<CrossEntropyAttrs>({
      .name = "cross_entropy",
      .kind = OpKind::Opaque,
      .num_inputs = 3,  // x, target, weight ([0] when absent)
      .num_outputs = 3,
      .autocast = AutocastPolicy::Float32,
      .save_inputs = 0b111,
      .save_outputs = 0b110,
      .promote_inputs = 0b101,  // the target stays integer
      .infer = ce_spec,
      .backward =
          [](BackwardContext& ctx, const CrossEntropyAttrs& a) {
            if (!ctx.needs_grad(0)) return;
            const Tensor& x = ctx.input(0);
            Tensor dx;
            if (ctx.grad_output_defined(0)) {
              dx = call1(
                  op_cross_entropy_backward(),
                  {ctx.grad_output(0), x, ctx.input(1), ctx.input(2), ctx.output(1), ctx.output(2)},
                  a);
            }
            if (ctx.grad_output_defined(1)) {  // lse = logsumexp(x): its gradient is softmax
              const int64_t cd = detail::class_dim(x.dim());
              Tensor d = ctx.grad_output(1).unsqueeze(cd).to(x.dtype()) * softmax(x, cd);
              dx = dx.defined() ? dx + d : d;
            }
            // total_weight depends on the target and weight only: no gradient for x.
            if (dx.defined()) ctx.set_grad_input(0, dx);
          },
  });
  return op;
}

const Op<CrossEntropyAttrs>& op_cross_entropy_backward() {
  static const auto& op = define_op<CrossEntropyAttrs>({
      .name = "cross_entropy_backward",
      .kind = OpKind::Opaque,
      .num_inputs = 6,                       // g, x, target, weight, lse, total_weight
      .inplace = InplacePolicy::OverInput1,  // dx over the logits: each read before written
      .save_inputs = 0b111111,
      .promote_inputs = 0b001011,  // g, x, weight to x's dtype; lse and total_weight stay
      .infer = ce_backward_spec,
      .backward =
          [](BackwardContext& ctx, const CrossEntropyAttrs& a) {
            // dx = G * (a * p - b) / denom with p = softmax(x), b the target distribution and
            // a = sum(b) per position: linear in G, and in x only through p. lse is x's
            // logsumexp, so differentiating p = softmax(x) covers it; lse and total_weight
            // get no gradient (the forward folds them in the same way).
            const Tensor& h = ctx.grad_output(0);
            const Tensor &g = ctx.input(0), &x = ctx.input(1), &t = ctx.input(2);
            const Tensor &w = ctx.input(3), &tw = ctx.input(5);
            const int64_t cd = detail::class_dim(x.dim());
            if (ctx.needs_grad(0)) {
              Tensor unit =
                  call1(op_cross_entropy_backward(), {ones_like(g), x, t, w, ctx.input(4), tw}, a);
              Tensor hu = h * unit;
              ctx.set_grad_input(0, a.reduction == Reduction::None ? sum(hu, {cd}) : sum(hu));
            }
            if (ctx.needs_grad(1)) {
              Tensor b = target_distribution(t, w, a, x.shape(), x.dtype());
              Tensor coef = sum(b, {cd}, /*keepdim=*/true);
              coef = coef * (a.reduction == Reduction::None ? g.unsqueeze(cd) : g);
              if (a.reduction == Reduction::Mean) coef = coef / tw.to(x.dtype());
              ctx.set_grad_input(1, call1(op_softmax_backward(), {h * coef, softmax(x, cd)},
                                          SoftmaxAttrs{.dim = cd}));
            }
          },
  });
  return op;
}

namespace {

// torch's cross_entropy_loss_prob_target: -sum(w * target' * log_softmax(x)) reduced, with
// target' = target * (1 - ls) + ls / C; 'mean' divides by the number of positions.
Tensor cross_entropy_probs(const Tensor& input, const Tensor& target,
                           const CrossEntropyLossOptions& o) {
  with_op_context(op_cross_entropy(), [&] {
    check_attrs({.reduction = o.reduction, .label_smoothing = o.label_smoothing});
    ATH_CHECK(is_floating(input.dtype()), DTypeError, "expected a floating input, got {}",
              dtype_name(input.dtype()));
    ATH_CHECK(is_floating(target.dtype()), DTypeError,
              "expected a floating target for class probabilities, got {} (shape {})",
              dtype_name(target.dtype()), to_string(target.shape()));
    ATH_CHECK(input.dim() >= 1, ShapeError, "expected an input of 1 or more dims, got shape {}",
              to_string(input.shape()));
    ATH_CHECK(o.ignore_index < 0, ValueError,
              "ignore_index ({}) is not supported for class-probability targets", o.ignore_index);
    if (o.weight.defined()) {
      ATH_CHECK(is_floating(o.weight.dtype()), DTypeError, "weight must be floating, got {}",
                dtype_name(o.weight.dtype()));
      const int64_t classes = input.shape()[detail::class_dim(input.dim())];
      ATH_CHECK(o.weight.dim() == 1 && o.weight.shape()[0] == classes, ShapeError,
                "weight tensor should be defined either for all {} classes or no classes, but "
                "got weight of shape {}",
                classes, to_string(o.weight.shape()));
    }
  });
  const int64_t cd = detail::class_dim(input.dim());
  const int64_t classes = input.shape()[cd];
  Tensor t = target;
  if (o.label_smoothing > 0) {
    t = target * (1 - o.label_smoothing) + o.label_smoothing / static_cast<double>(classes);
  }
  Tensor terms = log_softmax(input, cd) * t;
  if (o.weight.defined()) {
    Shape ws(static_cast<std::size_t>(input.dim()), 1);
    ws[static_cast<std::size_t>(cd)] = classes;
    terms = terms * o.weight.view(ws);
  }
  switch (o.reduction) {
    case Reduction::None:
      return -sum(terms, {cd});
    case Reduction::Sum:
      return -sum(terms);
    default:  // Mean
      if (input.numel() == 0) return sum(terms) * std::numeric_limits<double>::quiet_NaN();
      return -sum(terms) / static_cast<double>(input.numel() / classes);
  }
}

}  // namespace

Tensor cross_entropy(const Tensor& input, const Tensor& target,
                     const CrossEntropyLossOptions& options) {
  if (input.defined() && target.defined() && input.shape() == target.shape()) {
    return cross_entropy_probs(input, target, options);
  }
  CrossEntropyAttrs a{.reduction = options.reduction,
                      .ignore_index = options.ignore_index,
                      .label_smoothing = options.label_smoothing,
                      .has_weight = options.weight.defined()};
  return call1(op_cross_entropy(), {input, target, detail::or_absent(options.weight)}, a);
}

}  // namespace ath
