// convolution (forward and transposed) and its weight gradient: shape rules, backward formulas,
// and the public conv1d / conv2d / conv_transpose2d, which normalize their options to ConvAttrs.
//
// The three ops form a closed set under differentiation: the input gradient of a convolution
// is a transposed convolution (and vice versa), and the weight gradient's own gradients are a
// convolution and a transposed convolution, so double backward works.
#include "athanor/ops/conv.h"

#include "athanor/ops/dispatch.h"
#include "athanor/ops/reduction.h"
#include "athanor/ops/views.h"
#include "epilogue_shared.h"

namespace ath {

namespace {

int64_t kernel_range(int64_t k, int64_t d) { return d * (k - 1) + 1; }

std::string pair_str(const std::array<int64_t, 2>& v) {
  return fmt::format("[{}, {}]", v[0], v[1]);
}

void check_geometry(const ConvAttrs& a) {
  for (int i = 0; i < 2; ++i) {
    ATH_CHECK(a.stride[i] >= 1, ValueError, "stride must be positive, got {}", pair_str(a.stride));
    ATH_CHECK(a.dilation[i] >= 1, ValueError, "dilation must be positive, got {}",
              pair_str(a.dilation));
    ATH_CHECK(a.pad_l[i] >= 0, ValueError, "padding must be non-negative, got {}",
              pair_str(a.pad_l));
  }
  ATH_CHECK(a.groups >= 1, ValueError, "groups must be positive, got {}", a.groups);
}

// Spatial output size of a forward convolution; throws when the kernel does not fit.
std::array<int64_t, 2> forward_size(const ConvAttrs& a, const Shape& x, const Shape& w) {
  std::array<int64_t, 2> out{};
  for (int i = 0; i < 2; ++i) {
    const int64_t padded = x[2 + i] + a.pad_l[i] + a.pad_r[i];
    const int64_t range = kernel_range(w[2 + i], a.dilation[i]);
    ATH_CHECK(padded >= range, ShapeError,
              "kernel of size {} (dilated: {}) is larger than the padded input ({} with padding) "
              "in spatial dim {}; input shape {}, weight shape {}",
              w[2 + i], range, padded, i, to_string(x), to_string(w));
    out[i] = (padded - range) / a.stride[i] + 1;
  }
  return out;
}

std::array<int64_t, 2> transposed_size(const ConvAttrs& a, const Shape& x, const Shape& w) {
  std::array<int64_t, 2> out{};
  for (int i = 0; i < 2; ++i) {
    out[i] = (x[2 + i] - 1) * a.stride[i] - a.pad_l[i] - a.pad_r[i] +
             kernel_range(w[2 + i], a.dilation[i]);
    ATH_CHECK(out[i] > 0, ShapeError,
              "transposed convolution output size {} in spatial dim {} is not positive; input "
              "shape {}, weight shape {}",
              out[i], i, to_string(x), to_string(w));
  }
  return out;
}

OutputSpec conv_spec(TensorSpan in, const ConvAttrs& a) {
  ATH_CHECK(in.size() == 2 || in.size() == 3, ValueError,
            "expected (input, weight) or (input, weight, bias), got {} tensors", in.size());
  const Tensor &x = in[0], &w = in[1];
  ATH_CHECK(x.dim() == 4 && w.dim() == 4, ShapeError,
            "expected a 4-D input [N, C, H, W] and a 4-D weight, got shapes {} and {}",
            to_string(x.shape()), to_string(w.shape()));
  check_geometry(a);
  const Shape &xs = x.shape(), &ws = w.shape();
  ATH_CHECK(ws[2] >= 1 && ws[3] >= 1, ShapeError, "weight of shape {} has an empty kernel",
            to_string(ws));
  const int64_t g = a.groups, c = xs[1];
  int64_t out_c = 0;
  if (!a.transposed) {
    out_c = ws[0];
    ATH_CHECK(ws[1] * g == c, ShapeError,
              "weight of shape {} with groups={} expects {} input channels, but the input of "
              "shape {} has {}",
              to_string(ws), g, ws[1] * g, to_string(xs), c);
    ATH_CHECK(out_c % g == 0, ShapeError,
              "weight of shape {}: {} output channels are not divisible by groups={}",
              to_string(ws), out_c, g);
  } else {
    ATH_CHECK(ws[0] == c, ShapeError,
              "transposed weight of shape {} expects {} input channels, but the input of shape "
              "{} has {}",
              to_string(ws), ws[0], to_string(xs), c);
    ATH_CHECK(c % g == 0, ShapeError, "{} input channels are not divisible by groups={}", c, g);
    out_c = ws[1] * g;
  }
  DType t = promote_types(x.dtype(), w.dtype());
  if (in.size() == 3) {
    const Tensor& b = in[2];
    ATH_CHECK(b.dim() == 1 && b.shape()[0] == out_c, ShapeError,
              "bias of shape {} does not match the {} output channels (weight shape {})",
              to_string(b.shape()), out_c, to_string(ws));
    t = promote_types(t, b.dtype());
  }
  ATH_CHECK(is_floating(t), DTypeError, "expected floating tensors, got input {} and weight {}",
            dtype_name(x.dtype()), dtype_name(w.dtype()));
  auto sp = a.transposed ? transposed_size(a, xs, ws) : forward_size(a, xs, ws);
  return OutputSpec{{{Shape{xs[0], out_c, sp[0], sp[1]}, t}}, t};
}

// The transposed convolution that maps grad_out back onto an input of `x_shape` (pad_r absorbs
// the rows the forward stride skipped: PyTorch's output_padding).
ConvAttrs input_grad_attrs(const ConvAttrs& a, const Shape& x_shape, const Shape& w_shape) {
  ConvAttrs t = a;
  t.transposed = true;
  for (int i = 0; i < 2; ++i) {
    const int64_t span =
        x_shape[2 + i] + a.pad_l[i] + a.pad_r[i] - kernel_range(w_shape[2 + i], a.dilation[i]);
    t.pad_r[i] = a.pad_r[i] - span % a.stride[i];
  }
  return t;
}

}  // namespace

namespace detail {

OutputSpec convolution_spec(TensorSpan in, const ConvAttrs& a) { return conv_spec(in, a); }

void convolution_backward(BackwardContext& ctx, const ConvAttrs& a, const Tensor& g) {
  const Tensor &x = ctx.input(0), &w = ctx.input(1);
  const bool bias = ctx.num_inputs() == 3 && ctx.needs_grad(2);
  const std::array<int64_t, 2> k{w.shape()[2], w.shape()[3]};
  if (!a.transposed) {
    if (ctx.needs_grad(0))
      ctx.set_grad_input(0, convolution(g, w, {}, input_grad_attrs(a, x.shape(), w.shape())));
    if (ctx.needs_grad(1) || bias) {
      Tensor args[2] = {x, g};
      Outputs o = call(op_convolution_backward_weight(), TensorSpan(args),
                       ConvWeightGradAttrs{.geometry = a, .kernel = k, .with_bias = bias});
      if (ctx.needs_grad(1)) ctx.set_grad_input(1, o[0]);
      if (bias) ctx.set_grad_input(2, o[1]);
    }
  } else {
    // y = conv^T(x, w): x is the forward convolution's output and y its input.
    ConvAttrs fwd = a;
    fwd.transposed = false;
    if (ctx.needs_grad(0)) ctx.set_grad_input(0, convolution(g, w, {}, fwd));
    if (ctx.needs_grad(1)) {
      Tensor args[2] = {g, x};  // roles swapped: g is the forward input here
      ctx.set_grad_input(1, call(op_convolution_backward_weight(), TensorSpan(args),
                                 ConvWeightGradAttrs{.geometry = fwd, .kernel = k})[0]);
    }
    if (bias) ctx.set_grad_input(2, sum(g, {0, 2, 3}));
  }
}

}  // namespace detail

const Op<ConvAttrs>& op_convolution() {
  static const auto& op = define_op<ConvAttrs>({
      .name = "convolution",
      .kind = OpKind::Opaque,
      .num_inputs = -1,
      .autocast = AutocastPolicy::LowPrecision,
      .save_inputs = 0b011,
      .infer = conv_spec,
      .backward =
          [](BackwardContext& ctx, const ConvAttrs& a) {
            detail::convolution_backward(ctx, a, ctx.grad_output(0));
          },
  });
  return op;
}

const Op<ConvWeightGradAttrs>& op_convolution_backward_weight() {
  static const auto& op = define_op<ConvWeightGradAttrs>({
      .name = "convolution_backward_weight",
      .kind = OpKind::Opaque,
      .num_inputs = 2,
      .num_outputs = 2,
      .save_inputs = 0b11,
      .infer =
          [](TensorSpan in, const ConvWeightGradAttrs& a) {
            const Tensor &x = in[0], &dy = in[1];
            ATH_CHECK(x.dim() == 4 && dy.dim() == 4, ShapeError,
                      "expected a 4-D input and a 4-D output gradient, got shapes {} and {}",
                      to_string(x.shape()), to_string(dy.shape()));
            const ConvAttrs& geo = a.geometry;
            check_geometry(geo);
            const int64_t g = geo.groups, c = x.shape()[1], o = dy.shape()[1];
            ATH_CHECK(c % g == 0 && o % g == 0 && x.shape()[0] == dy.shape()[0], ShapeError,
                      "input of shape {} and output gradient of shape {} do not fit groups={}",
                      to_string(x.shape()), to_string(dy.shape()), g);
            Shape ws{o, c / g, a.kernel[0], a.kernel[1]};
            auto sp = forward_size(geo, x.shape(), ws);
            ATH_CHECK(sp[0] == dy.shape()[2] && sp[1] == dy.shape()[3], ShapeError,
                      "output gradient of shape {} does not match the convolution output {} of "
                      "an input of shape {}",
                      to_string(dy.shape()), pair_str(sp), to_string(x.shape()));
            DType t = promote_types(x.dtype(), dy.dtype());
            ATH_CHECK(is_floating(t), DTypeError, "expected floating tensors, got {} and {}",
                      dtype_name(x.dtype()), dtype_name(dy.dtype()));
            Shape bias_shape{a.with_bias ? o : 0};
            return OutputSpec{{{ws, t}, {bias_shape, t}}, t};
          },
      .backward =
          [](BackwardContext& ctx, const ConvWeightGradAttrs& a) {
            // dw = sum x * dy is bilinear: its gradients are the two convolutions of the
            // incoming weight gradient (and db = sum dy contributes a bias to the second).
            const Tensor &x = ctx.input(0), &dy = ctx.input(1);
            const Tensor& gw = ctx.grad_output(0);
            if (ctx.needs_grad(0)) {
              ctx.set_grad_input(
                  0, convolution(dy, gw, {}, input_grad_attrs(a.geometry, x.shape(), gw.shape())));
            }
            if (ctx.needs_grad(1)) {
              std::optional<Tensor> gb;
              if (a.with_bias && ctx.grad_output_defined(1)) gb = ctx.grad_output(1);
              ctx.set_grad_input(1, convolution(x, gw, gb, a.geometry));
            }
          },
  });
  return op;
}

Tensor convolution(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias,
                   const ConvAttrs& attrs) {
  if (bias && bias->defined()) return call1(op_convolution(), {x, weight, *bias}, attrs);
  return call1(op_convolution(), {x, weight}, attrs);
}

// ---- public functions ------------------------------------------------------------------------

namespace {

// Errors name the public function and the op underneath: "conv2d: convolution: ...".
template <class Fn>
Tensor named(const char* name, Fn&& fn) {
  try {
    return with_op_context(op_convolution(), fn);
  } catch (Error& e) {
    e.prepend(std::string(name) + ": ");
    throw;
  }
}

void check_positive(const char* what, const Int2& v) {
  ATH_CHECK(v[0] >= 1 && v[1] >= 1, ValueError, "{} must be positive, got [{}, {}]", what, v[0],
            v[1]);
}

// Resolves "same" / "valid" / sizes into (pad_l, pad_r) for kernel sizes k.
void resolve_padding(const ConvPadding& p, const Int2& stride, const Int2& dilation, const Shape& w,
                     ConvAttrs& a) {
  if (p.mode.empty() || p.mode == "valid") {
    Int2 v = p.mode.empty() ? p.value : Int2(0);
    ATH_CHECK(v[0] >= 0 && v[1] >= 0, ValueError, "padding must be non-negative, got [{}, {}]",
              v[0], v[1]);
    a.pad_l = a.pad_r = v.v;
    return;
  }
  ATH_CHECK(p.mode == "same", ValueError, "padding must be a size, 'valid' or 'same', got '{}'",
            p.mode);
  ATH_CHECK(stride[0] == 1 && stride[1] == 1, ValueError,
            "padding='same' is not supported for strided convolutions (stride [{}, {}])", stride[0],
            stride[1]);
  for (int i = 0; i < 2; ++i) {
    const int64_t total = dilation[i] * (w[2 + i] - 1);
    a.pad_l[i] = total / 2;
    a.pad_r[i] = total - total / 2;
  }
}

Tensor batched(const Tensor& x, int64_t dims, bool& unbatched) {
  unbatched = x.dim() == dims - 1;
  return unbatched ? x.unsqueeze(0) : x;
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias,
              const Conv2dOptions& o) {
  return named("conv2d", [&] {
    ATH_CHECK(x.dim() == 3 || x.dim() == 4, ShapeError,
              "expected a 3-D (unbatched) or 4-D input, got shape {}", to_string(x.shape()));
    ATH_CHECK(weight.dim() == 4, ShapeError, "expected a 4-D weight, got shape {}",
              to_string(weight.shape()));
    check_positive("stride", o.stride);
    check_positive("dilation", o.dilation);
    ConvAttrs a{.stride = o.stride.v, .dilation = o.dilation.v, .groups = o.groups};
    resolve_padding(o.padding, o.stride, o.dilation, weight.shape(), a);
    bool unbatched = false;
    Tensor y = convolution(batched(x, 4, unbatched), weight, bias, a);
    return unbatched ? y.squeeze(0) : y;
  });
}

Tensor conv1d(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias,
              const Conv1dOptions& o) {
  return named("conv1d", [&] {
    ATH_CHECK(x.dim() == 2 || x.dim() == 3, ShapeError,
              "expected a 2-D (unbatched) or 3-D input [N, C, L], got shape {}",
              to_string(x.shape()));
    ATH_CHECK(weight.dim() == 3, ShapeError, "expected a 3-D weight [out, in/groups, k], got {}",
              to_string(weight.shape()));
    ATH_CHECK(!o.padding.mode.empty() || o.padding.value[0] == o.padding.value[1], ValueError,
              "conv1d takes one padding size, got [{}, {}]", o.padding.value[0],
              o.padding.value[1]);
    ATH_CHECK(o.stride >= 1 && o.dilation >= 1, ValueError,
              "stride and dilation must be positive, got {} and {}", o.stride, o.dilation);
    // A 1-D convolution is a 2-D one over a height-1 plane.
    Shape w4 = weight.shape();
    w4.insert(w4.begin() + 2, 1);
    ConvAttrs a{.stride = {1, o.stride}, .dilation = {1, o.dilation}, .groups = o.groups};
    ConvPadding p = o.padding.mode.empty() ? ConvPadding(0, o.padding.value[1]) : o.padding;
    resolve_padding(p, Int2(1, o.stride), Int2(1, o.dilation), w4, a);
    bool unbatched = false;
    Tensor xb = batched(x, 3, unbatched);
    Tensor y = convolution(xb.unsqueeze(2), weight.unsqueeze(2), bias, a).squeeze(2);
    return unbatched ? y.squeeze(0) : y;
  });
}

Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias,
                        const ConvTranspose2dOptions& o) {
  return named("conv_transpose2d", [&] {
    ATH_CHECK(x.dim() == 3 || x.dim() == 4, ShapeError,
              "expected a 3-D (unbatched) or 4-D input, got shape {}", to_string(x.shape()));
    check_positive("stride", o.stride);
    check_positive("dilation", o.dilation);
    ConvAttrs a{
        .stride = o.stride.v, .dilation = o.dilation.v, .groups = o.groups, .transposed = true};
    for (int i = 0; i < 2; ++i) {
      ATH_CHECK(o.padding[i] >= 0, ValueError, "padding must be non-negative, got [{}, {}]",
                o.padding[0], o.padding[1]);
      const int64_t op = o.output_padding[i];
      ATH_CHECK(op >= 0 && (op < o.stride[i] || op < o.dilation[i]), ValueError,
                "output_padding [{}, {}] must be non-negative and smaller than either stride "
                "[{}, {}] or dilation [{}, {}]",
                o.output_padding[0], o.output_padding[1], o.stride[0], o.stride[1], o.dilation[0],
                o.dilation[1]);
      a.pad_l[i] = o.padding[i];
      a.pad_r[i] = o.padding[i] - op;
    }
    bool unbatched = false;
    Tensor y = convolution(batched(x, 4, unbatched), weight, bias, a);
    return unbatched ? y.squeeze(0) : y;
  });
}

}  // namespace ath
