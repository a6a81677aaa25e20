// Gradient formulas shared by the norm ops; see norm_grad.h for the canonical view.
//
// Notation (X layout): xc = x - mean, xh = xc * rstd, gw = g * w, and per statistic group
// A = mean(gw), B = mean(gw * xh). The backward op computes
//   dx = rstd * (gw - A - xh * B)    dw = sum(g * xh)    db = sum(g)
// (dx = rstd * gw when the statistics are constants). Its own gradient below follows from
// differentiating those three expressions w.r.t. g, x, mean, rstd and w, with mean and rstd as
// independent inputs; they connect back to x through norm_forward_grad's statistics term.
#include "norm_grad.h"

#include "athanor/ops/creation.h"
#include "athanor/ops/dispatch.h"
#include "athanor/ops/pointwise.h"
#include "athanor/ops/reduction.h"
#include "athanor/ops/views.h"

namespace ath::detail {

namespace {

void accumulate(Tensor& acc, const Tensor& t) { acc = acc.defined() ? acc + t : t; }

int64_t group_count(const NormView& v) {
  int64_t n = 1;
  for (int64_t d : v.reduce) n *= v.x_shape[static_cast<std::size_t>(d)];
  return n;
}

// What flows into x from gradients on the forward op's statistics outputs:
// d mean/dx = 1/n, d rstd/dx = -rstd^3 * xc / n, d var_unbiased/dx = 2 * xc / (n - 1).
Tensor stats_grad(BackwardContext& ctx, const NormView& v) {
  const bool gm = ctx.grad_output_defined(1), gr = ctx.grad_output_defined(2);
  const bool gv =
      ctx.num_outputs() > 3 && ctx.grad_output_defined(3) && numel(ctx.output_meta(3).shape) > 0;
  if (!gm && !gr && !gv) return {};
  const double n = static_cast<double>(group_count(v));
  Tensor x = reshape(ctx.input(0), v.x_shape);
  Tensor xc = x - reshape(ctx.output(1), v.stat_shape);
  Tensor out;
  if (gm) accumulate(out, (reshape(ctx.grad_output(1), v.stat_shape) / n).expand(v.x_shape));
  if (gr) {
    Tensor r = reshape(ctx.output(2), v.stat_shape);
    accumulate(out, reshape(ctx.grad_output(2), v.stat_shape) * (r * r * r) * xc * (-1.0 / n));
  }
  if (gv) accumulate(out, reshape(ctx.grad_output(3), v.stat_shape) * xc * (2.0 / (n - 1)));
  return reshape(out, ctx.input_meta(0).shape);
}

}  // namespace

const Tensor& absent_input() {
  static const Tensor* t = new Tensor(empty({0}, kFloat32));  // never freed, like the registry
  return *t;
}

void check_param(const Tensor& t, bool present, const char* what, const Shape& shape,
                 const Tensor& x) {
  if (!present) return;
  ATH_CHECK(is_floating(t.dtype()), DTypeError, "{} must be floating, got {}", what,
            dtype_name(t.dtype()));
  ATH_CHECK(t.shape() == shape, ShapeError, "expected {} of shape {} for input of shape {}, got {}",
            what, to_string(shape), to_string(x.shape()), to_string(t.shape()));
}

void norm_forward_grad(BackwardContext& ctx, const NormView& v, bool has_weight, bool has_bias,
                       int weight_input, int bias_input, bool stats_differentiable,
                       const std::function<Outputs(TensorSpan, const NormGradMask&)>& run) {
  NormGradMask mask{ctx.needs_grad(0), has_weight && ctx.needs_grad(weight_input),
                    has_bias && ctx.needs_grad(bias_input)};
  Tensor gx;
  if ((mask[0] || mask[1] || mask[2]) && ctx.grad_output_defined(0)) {
    Tensor in[5] = {ctx.grad_output(0), ctx.input(0), ctx.output(1), ctx.output(2),
                    has_weight ? ctx.input(weight_input) : absent_input()};
    Outputs o = run(TensorSpan(in), mask);
    if (mask[0]) gx = o[0];
    if (mask[1]) ctx.set_grad_input(weight_input, o[1]);
    if (mask[2]) ctx.set_grad_input(bias_input, o[2]);
  }
  if (stats_differentiable && ctx.needs_grad(0)) {
    Tensor extra = stats_grad(ctx, v);
    if (extra.defined()) accumulate(gx, extra);
  }
  if (gx.defined()) ctx.set_grad_input(0, gx);
}

void norm_backward_grad(BackwardContext& ctx, const NormView& v, bool has_weight,
                        const NormGradMask& mask, bool stats_constant) {
  auto upstream = [&](int i) {
    return mask[static_cast<std::size_t>(i)] && ctx.grad_output_defined(i) ? ctx.grad_output(i)
                                                                           : Tensor();
  };
  const Tensor hx = upstream(0), hw = upstream(1), hb = upstream(2);
  if (!hx.defined() && !hw.defined() && !hb.defined()) return;
  const Shape& xs = v.x_shape;
  auto mean_r = [&](const Tensor& t) { return mean(t, v.reduce, /*keepdim=*/true); };
  auto sum_r = [&](const Tensor& t) { return sum(t, v.reduce, /*keepdim=*/true); };

  Tensor g = reshape(ctx.input(0), xs), x = reshape(ctx.input(1), xs);
  Tensor r = reshape(ctx.input(3), v.stat_shape);
  Tensor w = has_weight ? reshape(ctx.input(4), v.weight_shape) : Tensor();
  Tensor xc = x - reshape(ctx.input(2), v.stat_shape);
  Tensor xh = xc * r;
  Tensor gw = w.defined() ? g * w : g;

  Tensor grad_g, grad_xh, grad_r, grad_w;
  if (hx.defined()) {
    Tensor h = reshape(hx, xs), grad_gw;
    if (stats_constant) {
      grad_gw = h * r;
    } else {
      Tensor hr = h * r, b = mean_r(gw * xh), hrm = mean_r(hr * xh);
      grad_gw = hr - mean_r(hr) - xh * hrm;
      accumulate(grad_xh, -(gw * hrm + hr * b));
      accumulate(grad_r, sum_r(h * (gw - mean_r(gw) - xh * b)));
    }
    accumulate(grad_g, w.defined() ? grad_gw * w : grad_gw);
    if (w.defined()) accumulate(grad_w, sum_to(grad_gw * g, v.weight_shape));
  }
  if (hw.defined()) {  // dw = sum(g * xh)
    Tensor h = reshape(hw, v.weight_shape);
    accumulate(grad_g, h * xh);
    accumulate(grad_xh, h * g);
  }
  if (hb.defined()) accumulate(grad_g, reshape(hb, v.weight_shape).expand(xs));

  if (ctx.needs_grad(0) && grad_g.defined()) {
    ctx.set_grad_input(0, reshape(grad_g, ctx.input_meta(0).shape));
  }
  if (ctx.needs_grad(1) && grad_xh.defined()) {
    ctx.set_grad_input(1, reshape(grad_xh * r, ctx.input_meta(1).shape));
  }
  if (!stats_constant) {
    if (ctx.needs_grad(2) && grad_xh.defined()) {
      ctx.set_grad_input(2, reshape(-sum_r(grad_xh * r), ctx.input_meta(2).shape));
    }
    if (ctx.needs_grad(3)) {
      Tensor gr = grad_xh.defined() ? sum_r(grad_xh * xc) : Tensor();
      if (grad_r.defined()) accumulate(gr, grad_r);
      if (gr.defined()) ctx.set_grad_input(3, reshape(gr, ctx.input_meta(3).shape));
    }
  }
  if (has_weight && ctx.needs_grad(4) && grad_w.defined()) {
    ctx.set_grad_input(4, reshape(grad_w, ctx.input_meta(4).shape));
  }
}

OutputSpec norm_backward_spec(TensorSpan in, const Shape& stat_shape, const Shape& weight_shape,
                              bool has_weight, const NormGradMask& mask) {
  const Tensor &g = in[0], &x = in[1];
  ATH_CHECK(g.shape() == x.shape(), ShapeError, "grad shape {} doesn't match input shape {}",
            to_string(g.shape()), to_string(x.shape()));
  for (int i : {2, 3}) {
    ATH_CHECK(in[i].numel() == numel(stat_shape) && is_floating(in[i].dtype()), ShapeError,
              "expected {} of {} elements (shape {}), got shape {} {}", i == 2 ? "mean" : "rstd",
              numel(stat_shape), to_string(stat_shape), to_string(in[i].shape()),
              dtype_name(in[i].dtype()));
  }
  if (has_weight) {
    ATH_CHECK(in[4].numel() == numel(weight_shape) && is_floating(in[4].dtype()), ShapeError,
              "expected a floating weight of shape {}, got {} {}", to_string(weight_shape),
              to_string(in[4].shape()), dtype_name(in[4].dtype()));
  }
  DType t = promote_types(g.dtype(), x.dtype());
  ATH_CHECK(is_floating(t), DTypeError, "expected floating grad and input, got {} and {}",
            dtype_name(g.dtype()), dtype_name(x.dtype()));
  auto shape_if = [](bool on, const Shape& s) { return on ? s : Shape{0}; };
  return OutputSpec{{{shape_if(mask[0], x.shape()), t},
                     {shape_if(mask[1], weight_shape), t},
                     {shape_if(mask[2], weight_shape), t}},
                    t};
}

}  // namespace ath::detail
