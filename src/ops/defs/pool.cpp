// max_pool2d, avg_pool2d, adaptive_avg_pool2d: shape rules, backward formulas, public functions.
//
// Each pooling op pairs with a backward op that is its adjoint (linear in the gradient), and
// each backward op's own gradient is the forward op again (max pooling's through a gather at the
// saved indices), so double backward works.
#include "athanor/ops/comparison.h"
#include "athanor/ops/conv.h"
#include "athanor/ops/creation.h"
#include "athanor/ops/dispatch.h"
#include "athanor/ops/pointwise.h"
#include "athanor/ops/views.h"

namespace ath {

int64_t pool_output_size(int64_t in, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation,
                         bool ceil_mode) {
  const int64_t num = in + 2 * pad - dilation * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  int64_t out = (num >= 0 ? num / stride : -((-num + stride - 1) / stride)) + 1;
  // With ceil_mode the last window must start inside the input or its left padding.
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

namespace {

std::string pair_str(const std::array<int64_t, 2>& v) {
  return fmt::format("[{}, {}]", v[0], v[1]);
}

void check_planes(const Tensor& x) {
  ATH_CHECK(x.dim() == 4, ShapeError, "expected a 4-D input [N, C, H, W], got shape {}",
            to_string(x.shape()));
  ATH_CHECK(x.shape()[1] > 0 && x.shape()[2] > 0 && x.shape()[3] > 0, ShapeError,
            "expected non-empty channel and spatial dims, got shape {}", to_string(x.shape()));
  ATH_CHECK(is_floating(x.dtype()), DTypeError, "expected a floating input, got {}",
            dtype_name(x.dtype()));
}

// Output plane of a pooling window; throws naming the sizes when it is too small or the
// options are out of their domain.
std::array<int64_t, 2> pool_planes(const Shape& xs, const std::array<int64_t, 2>& k,
                                   const std::array<int64_t, 2>& s, const std::array<int64_t, 2>& p,
                                   const std::array<int64_t, 2>& d, bool ceil_mode) {
  for (int i = 0; i < 2; ++i) {
    ATH_CHECK(k[i] >= 1, ValueError, "kernel size must be positive, got {}", pair_str(k));
    ATH_CHECK(s[i] >= 1, ValueError, "stride must be positive, got {}", pair_str(s));
    ATH_CHECK(d[i] >= 1, ValueError, "dilation must be positive, got {}", pair_str(d));
    ATH_CHECK(p[i] >= 0 && p[i] <= k[i] / 2, ValueError,
              "padding should be non-negative and at most half the kernel size, got padding {} "
              "for kernel {}",
              pair_str(p), pair_str(k));
  }
  std::array<int64_t, 2> out{};
  for (int i = 0; i < 2; ++i) {
    out[i] = pool_output_size(xs[2 + i], k[i], p[i], s[i], d[i], ceil_mode);
    ATH_CHECK(out[i] >= 1, ShapeError,
              "input of shape {} is too small: kernel {} (dilation {}, padding {}) gives an "
              "output plane of [{}, {}]",
              to_string(xs), pair_str(k), pair_str(d), pair_str(p),
              pool_output_size(xs[2], k[0], p[0], s[0], d[0], ceil_mode),
              pool_output_size(xs[3], k[1], p[1], s[1], d[1], ceil_mode));
  }
  return out;
}

Shape with_plane(const Shape& s, const std::array<int64_t, 2>& plane) {
  return Shape{s[0], s[1], plane[0], plane[1]};
}

// A gradient with respect to the pooled output must have the pooled shape.
void check_grad(const Tensor& g, const Shape& want) {
  ATH_CHECK(g.shape() == want, ShapeError, "gradient of shape {} does not match the output {}",
            to_string(g.shape()), to_string(want));
}

void check_indices(const Tensor& idx, const Shape& want) {
  ATH_CHECK(idx.dtype() == kInt64, DTypeError, "indices must be int64, got {}",
            dtype_name(idx.dtype()));
  ATH_CHECK(idx.shape() == want, ShapeError, "indices of shape {} do not match shape {}",
            to_string(idx.shape()), to_string(want));
}

// max_pool2d_backward's shape rule (grad, indices -> the input plane), and the masked form's.
OutputSpec max_pool_grad_spec(TensorSpan in, const PoolGradAttrs& a) {
  check_planes(in[0]);
  check_indices(in[1], in[0].shape());
  ATH_CHECK(a.input[0] >= 1 && a.input[1] >= 1, ValueError, "input plane {} must be non-empty",
            pair_str(a.input));
  return OutputSpec{{{with_plane(in[0].shape(), a.input), in[0].dtype()}}, in[0].dtype()};
}

}  // namespace

const Op<MaxPool2dAttrs>& op_max_pool2d() {
  static const auto& op = define_op<MaxPool2dAttrs>({
      .name = "max_pool2d",
      .kind = OpKind::Opaque,
      .num_outputs = 2,
      .save_outputs = 0b10,
      .infer =
          [](TensorSpan in, const MaxPool2dAttrs& a) {
            check_planes(in[0]);
            auto plane =
                pool_planes(in[0].shape(), a.kernel, a.stride, a.padding, a.dilation, a.ceil_mode);
            Shape out = with_plane(in[0].shape(), plane);
            return OutputSpec{{{out, in[0].dtype()}, {out, kInt64}}, in[0].dtype()};
          },
      .backward =
          [](BackwardContext& ctx, const MaxPool2dAttrs&) {
            const Shape& s = ctx.input_meta(0).shape;
            Tensor in[2] = {ctx.grad_output(0), ctx.output(1)};
            ctx.set_grad_input(0, call1(op_max_pool2d_backward(), TensorSpan(in),
                                        PoolGradAttrs{.input = {s[2], s[3]}}));
          },
  });
  return op;
}

const Op<PoolGradAttrs>& op_max_pool2d_backward() {
  static const auto& op = define_op<PoolGradAttrs>({
      .name = "max_pool2d_backward",
      .kind = OpKind::Opaque,
      .num_inputs = 2,
      .save_inputs = 0b10,
      .promote_inputs = 0b01,  // indices stay int64
      .infer = max_pool_grad_spec,
      .backward =
          [](BackwardContext& ctx, const PoolGradAttrs&) {
            Tensor in[2] = {ctx.grad_output(0), ctx.input(1)};
            ctx.set_grad_input(0, call1(op_max_pool2d_gather(), TensorSpan(in)));
          },
  });
  return op;
}

const Op<PoolGradAttrs>& op_max_pool2d_backward_masked() {
  static const auto& op = define_op<PoolGradAttrs>({
      .name = "max_pool2d_backward_masked",
      .kind = OpKind::Opaque,
      .num_inputs = 3,
      .save_inputs = 0b110,
      .promote_inputs = 0b101,  // indices stay int64
      .infer =
          [](TensorSpan in, const PoolGradAttrs& a) {
            ATH_CHECK(in[2].shape() == in[0].shape(), ShapeError,
                      "pooled values of shape {} do not match the gradient's shape {}",
                      to_string(in[2].shape()), to_string(in[0].shape()));
            return max_pool_grad_spec(in, a);
          },
      .backward =
          [](BackwardContext& ctx, const PoolGradAttrs&) {
            // Linear in the gradient: the adjoint gathers at the winners and applies the
            // same mask. The mask is piecewise constant: no gradient for `pooled`.
            Tensor in[2] = {ctx.grad_output(0), ctx.input(1)};
            Tensor gathered = call1(op_max_pool2d_gather(), TensorSpan(in));
            const Tensor& pooled = ctx.input(2);
            ctx.set_grad_input(
                0, gathered * gt(pooled, zeros({}, pooled.dtype())).to(gathered.dtype()));
          },
  });
  return op;
}

const Op<NoAttrs>& op_max_pool2d_gather() {
  static const auto& op = define_op<NoAttrs>({
      .name = "max_pool2d_gather",
      .kind = OpKind::Opaque,
      .num_inputs = 2,
      .save_inputs = 0b10,
      .promote_inputs = 0b01,
      .infer =
          [](TensorSpan in, const NoAttrs&) {
            check_planes(in[0]);
            ATH_CHECK(in[1].dim() == 4 && in[1].shape()[0] == in[0].shape()[0] &&
                          in[1].shape()[1] == in[0].shape()[1],
                      ShapeError, "indices of shape {} do not fit an input of shape {}",
                      to_string(in[1].shape()), to_string(in[0].shape()));
            check_indices(in[1], in[1].shape());
            return OutputSpec{{{in[1].shape(), in[0].dtype()}}, in[0].dtype()};
          },
      .backward =
          [](BackwardContext& ctx, const NoAttrs&) {
            const Shape& s = ctx.input_meta(0).shape;
            Tensor in[2] = {ctx.grad_output(0), ctx.input(1)};
            ctx.set_grad_input(0, call1(op_max_pool2d_backward(), TensorSpan(in),
                                        PoolGradAttrs{.input = {s[2], s[3]}}));
          },
  });
  return op;
}

const Op<AvgPool2dAttrs>& op_avg_pool2d() {
  static const auto& op = define_op<AvgPool2dAttrs>({
      .name = "avg_pool2d",
      .kind = OpKind::Opaque,
      .infer =
          [](TensorSpan in, const AvgPool2dAttrs& a) {
            check_planes(in[0]);
            auto plane =
                pool_planes(in[0].shape(), a.kernel, a.stride, a.padding, {1, 1}, a.ceil_mode);
            return OutputSpec{{{with_plane(in[0].shape(), plane), in[0].dtype()}}, in[0].dtype()};
          },
      .backward =
          [](BackwardContext& ctx, const AvgPool2dAttrs& a) {
            const Shape& s = ctx.input_meta(0).shape;
            ctx.set_grad_input(0, call1(op_avg_pool2d_backward(), {ctx.grad_output(0)},
                                        AvgPoolGradAttrs{.pool = a, .input = {s[2], s[3]}}));
          },
  });
  return op;
}

const Op<AvgPoolGradAttrs>& op_avg_pool2d_backward() {
  static const auto& op = define_op<AvgPoolGradAttrs>({
      .name = "avg_pool2d_backward",
      .kind = OpKind::Opaque,
      .infer =
          [](TensorSpan in, const AvgPoolGradAttrs& a) {
            check_planes(in[0]);
            Shape xs = with_plane(in[0].shape(), a.input);
            const AvgPool2dAttrs& p = a.pool;
            auto plane = pool_planes(xs, p.kernel, p.stride, p.padding, {1, 1}, p.ceil_mode);
            check_grad(in[0], with_plane(xs, plane));
            return OutputSpec{{{xs, in[0].dtype()}}, in[0].dtype()};
          },
      .backward =
          [](BackwardContext& ctx, const AvgPoolGradAttrs& a) {
            ctx.set_grad_input(0, call1(op_avg_pool2d(), {ctx.grad_output(0)}, a.pool));
          },
  });
  return op;
}

const Op<AdaptivePoolAttrs>& op_adaptive_avg_pool2d() {
  static const auto& op = define_op<AdaptivePoolAttrs>({
      .name = "adaptive_avg_pool2d",
      .kind = OpKind::Opaque,
      .infer =
          [](TensorSpan in, const AdaptivePoolAttrs& a) {
            check_planes(in[0]);
            ATH_CHECK(a.output[0] >= 1 && a.output[1] >= 1, ValueError,
                      "output size must be positive, got {}", pair_str(a.output));
            return OutputSpec{{{with_plane(in[0].shape(), a.output), in[0].dtype()}},
                              in[0].dtype()};
          },
      .backward =
          [](BackwardContext& ctx, const AdaptivePoolAttrs&) {
            const Shape& s = ctx.input_meta(0).shape;
            ctx.set_grad_input(0, call1(op_adaptive_avg_pool2d_backward(), {ctx.grad_output(0)},
                                        PoolGradAttrs{.input = {s[2], s[3]}}));
          },
  });
  return op;
}

const Op<PoolGradAttrs>& op_adaptive_avg_pool2d_backward() {
  static const auto& op = define_op<PoolGradAttrs>({
      .name = "adaptive_avg_pool2d_backward",
      .kind = OpKind::Opaque,
      .infer =
          [](TensorSpan in, const PoolGradAttrs& a) {
            check_planes(in[0]);
            ATH_CHECK(a.input[0] >= 1 && a.input[1] >= 1, ValueError,
                      "input plane {} must be non-empty", pair_str(a.input));
            return OutputSpec{{{with_plane(in[0].shape(), a.input), in[0].dtype()}}, in[0].dtype()};
          },
      .backward =
          [](BackwardContext& ctx, const PoolGradAttrs&) {
            const Shape& out = ctx.input_meta(0).shape;
            ctx.set_grad_input(0, call1(op_adaptive_avg_pool2d(), {ctx.grad_output(0)},
                                        AdaptivePoolAttrs{.output = {out[2], out[3]}}));
          },
  });
  return op;
}

// ---- public functions ------------------------------------------------------------------------

namespace {

// Pools a 3-D (unbatched) input as a batch of one.
Tensor batch4(const Tensor& x, bool& unbatched) {
  ATH_CHECK(x.dim() == 3 || x.dim() == 4, ShapeError,
            "expected a 3-D (unbatched) or 4-D input, got shape {}", to_string(x.shape()));
  unbatched = x.dim() == 3;
  return unbatched ? x.unsqueeze(0) : x;
}

}  // namespace

std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, const MaxPool2dOptions& o) {
  return with_op_context(op_max_pool2d(), [&] {
    bool unbatched = false;
    Tensor xb = batch4(x, unbatched);
    MaxPool2dAttrs a{.kernel = o.kernel.v,
                     .stride = o.stride.value_or(o.kernel).v,
                     .padding = o.padding.v,
                     .dilation = o.dilation.v,
                     .ceil_mode = o.ceil_mode};
    Outputs out = call(op_max_pool2d(), TensorSpan(&xb, 1), a);
    if (unbatched) return std::pair<Tensor, Tensor>(out[0].squeeze(0), out[1].squeeze(0));
    return std::pair<Tensor, Tensor>(out[0], out[1]);
  });
}

Tensor max_pool2d(const Tensor& x, const MaxPool2dOptions& o) {
  return max_pool2d_with_indices(x, o).first;
}

Tensor avg_pool2d(const Tensor& x, const AvgPool2dOptions& o) {
  return with_op_context(op_avg_pool2d(), [&] {
    ATH_CHECK(!o.divisor_override || *o.divisor_override != 0, ValueError,
              "divisor_override must be non-zero");
    bool unbatched = false;
    Tensor xb = batch4(x, unbatched);
    AvgPool2dAttrs a{.kernel = o.kernel.v,
                     .stride = o.stride.value_or(o.kernel).v,
                     .padding = o.padding.v,
                     .ceil_mode = o.ceil_mode,
                     .count_include_pad = o.count_include_pad,
                     .divisor_override = o.divisor_override.value_or(0)};
    Tensor y = call1(op_avg_pool2d(), {xb}, a);
    return unbatched ? y.squeeze(0) : y;
  });
}

Tensor adaptive_avg_pool2d(const Tensor& x, Int2 output_size) {
  return with_op_context(op_adaptive_avg_pool2d(), [&] {
    bool unbatched = false;
    Tensor xb = batch4(x, unbatched);
    Tensor y = call1(op_adaptive_avg_pool2d(), {xb}, AdaptivePoolAttrs{.output = output_size.v});
    return unbatched ? y.squeeze(0) : y;
  });
}

}  // namespace ath
