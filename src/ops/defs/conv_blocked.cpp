// The blocked-layout inference ops (conv_blocked.h): shape rules and public functions. The
// kernels are oneDNN primitives (kernels/cpu/conv_blocked_dnnl.cpp).
#include "athanor/ops/conv_blocked.h"

#include <fmt/format.h>

#include <cstdlib>
#include <string_view>

#include "../kernels/cpu/conv_blocked_dnnl.h"
#include "athanor/core/cpu_isa.h"
#include "athanor/ops/dispatch.h"

namespace ath {

namespace {

constexpr const char* kInference = "an inference layout op (graph/passes.h: blocked_layout)";

void check_float32(const Tensor& t, const char* what) {
  ATH_CHECK(t.dtype() == kFloat32, DTypeError, "{} must be float32, got {}", what,
            dtype_name(t.dtype()));
}

void check_layout(ActivationLayout l) {
  ATH_CHECK(l == ActivationLayout::Nchw || l == ActivationLayout::Nhwc ||
                l == ActivationLayout::Blocked8 || l == ActivationLayout::Blocked16,
            ValueError, "unknown activation layout {}", static_cast<int64_t>(l));
}

void check_attrs(const ConvBlockedAttrs& a) {
  ATH_CHECK(a.conv.groups == 1 && !a.conv.transposed, ValueError,
            "blocked convolutions take groups = 1, not transposed");
  check_layout(a.src_layout);
  check_layout(a.dst_layout);
  ATH_CHECK(!a.winograd || (a.src_layout == ActivationLayout::Blocked16 &&
                            a.dst_layout == ActivationLayout::Blocked16 &&
                            winograd_eligible(a.conv, a.weight_shape)),
            ValueError,
            "a Winograd convolution needs AVX-512, nChw16c in and out, a 3x3 stride-1 kernel and "
            "channels that are multiples of 16");
  const bool pooled = a.pool[0] != 1 || a.pool[1] != 1;
  ATH_CHECK(a.pool[0] >= 1 && a.pool[1] >= 1 &&
                (!pooled || (!a.residual && (a.dst_layout == ActivationLayout::Blocked8 ||
                                             a.dst_layout == ActivationLayout::Blocked16))),
            ValueError,
            "a pooled blocked convolution needs pool sizes >= 1, a blocked output and no "
            "residual");
  ATH_CHECK(a.weight_shape[1] == a.src_shape[1], ShapeError,
            "weight of shape [{}, {}, {}, {}] does not match the input's {} channels",
            a.weight_shape[0], a.weight_shape[1], a.weight_shape[2], a.weight_shape[3],
            a.src_shape[1]);
  if (pooled) {
    const auto [oh, ow] = kernels::conv_blocked_output_size(a);
    ATH_CHECK(oh >= a.pool[0] && ow >= a.pool[1], ShapeError,
              "a {}x{} pool of a {}x{} convolution output", a.pool[0], a.pool[1], oh, ow);
  }
}

// The logical [N, C, H, W] of a tensor in `layout` with `channels` channels (Nchw: its shape).
std::array<int64_t, 4> logical_shape(const Tensor& t, ActivationLayout layout, int64_t channels,
                                     const char* op) {
  const Shape& s = t.shape();
  std::array<int64_t, 4> nchw{};
  bool ok = false;
  switch (layout) {
    case ActivationLayout::Nchw:
      ok = s.size() == 4;
      if (ok) nchw = {s[0], s[1], s[2], s[3]};
      break;
    case ActivationLayout::Nhwc:
      ok = s.size() == 4;
      if (ok) nchw = {s[0], s[3], s[1], s[2]};
      break;
    case ActivationLayout::Blocked8:
    case ActivationLayout::Blocked16: {
      const int64_t b = static_cast<int64_t>(layout);
      ok = s.size() == 5 && s[4] == b && channels > 0 && (channels + b - 1) / b == s[1];
      if (ok) nchw = {s[0], channels, s[2], s[3]};
      break;
    }
  }
  ATH_CHECK(ok, ShapeError, "{}: a tensor of shape {} is not in layout {}{}", op, to_string(s),
            static_cast<int64_t>(layout),
            channels > 0 ? fmt::format(" with {} channels", channels) : std::string());
  return nchw;
}

Shape output_shape(const ConvBlockedAttrs& a) {
  const auto [oh, ow] = kernels::conv_blocked_output_size(a);
  return layout_shape({a.src_shape[0], a.weight_shape[0], oh / a.pool[0], ow / a.pool[1]},
                      a.dst_layout);
}

}  // namespace

ActivationLayout inference_activation_layout() {
  return cpu_isa() >= CpuIsa::Avx512 ? ActivationLayout::Nhwc : ActivationLayout::Blocked8;
}

bool winograd_eligible(const ConvAttrs& c, const std::array<int64_t, 4>& w) {
  static const bool enabled = [] {
    const char* e = std::getenv("ATH_CONV_WINOGRAD");
    return e == nullptr || std::string_view(e) != "0";
  }();
  return enabled && cpu_isa() >= CpuIsa::Avx512 && c.groups == 1 && !c.transposed && w[2] == 3 &&
         w[3] == 3 && c.stride[0] == 1 && c.stride[1] == 1 && c.dilation[0] == 1 &&
         c.dilation[1] == 1 && w[0] % 16 == 0 && w[1] % 16 == 0;
}

Shape layout_shape(const std::array<int64_t, 4>& nchw, ActivationLayout layout) {
  const auto [n, c, h, w] = nchw;
  switch (layout) {
    case ActivationLayout::Nchw:
      return {n, c, h, w};
    case ActivationLayout::Nhwc:
      return {n, h, w, c};
    case ActivationLayout::Blocked8:
    case ActivationLayout::Blocked16: {
      const int64_t b = static_cast<int64_t>(layout);
      return {n, (c + b - 1) / b, h, w, b};
    }
  }
  ATH_THROW(ValueError, "unknown activation layout {}", static_cast<int64_t>(layout));
}

const Op<ConvBlockedAttrs>& op_conv_pack_weight() {
  static const auto& op = define_op<ConvBlockedAttrs>({
      .name = "conv_pack_weight",
      .infer =
          [](TensorSpan in, const ConvBlockedAttrs& a) {
            check_attrs(a);
            check_float32(in[0], "the weight");
            ATH_CHECK(in[0].shape() == Shape(a.weight_shape.begin(), a.weight_shape.end()),
                      ShapeError,
                      "weight of shape {} does not match the attributes' [{}, {}, {}, {}]",
                      to_string(in[0].shape()), a.weight_shape[0], a.weight_shape[1],
                      a.weight_shape[2], a.weight_shape[3]);
            const int64_t n = kernels::conv_packed_weight_bytes(a) / 4;
            return OutputSpec{{{{n}, kFloat32}}, kFloat32};
          },
      .not_differentiable = kInference,
  });
  return op;
}

const Op<ConvBlockedAttrs>& op_conv_blocked() {
  static const auto& op = define_op<ConvBlockedAttrs>({
      .name = "conv_blocked",
      .num_inputs = -1,
      .infer =
          [](TensorSpan in, const ConvBlockedAttrs& a) {
            check_attrs(a);
            const std::size_t want = 2 + (a.with_bias ? 1 : 0) + (a.residual ? 1 : 0);
            ATH_CHECK(in.size() == want, ValueError,
                      "expected {} tensors (input, packed weight{}{}), got {}", want,
                      a.with_bias ? ", bias" : "", a.residual ? ", residual" : "", in.size());
            for (const Tensor& t : in) check_float32(t, "every tensor");
            const auto& s = a.src_shape;
            const Shape src = layout_shape(s, a.src_layout);
            ATH_CHECK(in[0].shape() == src, ShapeError, "input of shape {}, expected {}",
                      to_string(in[0].shape()), to_string(src));
            // The packed weight's size is checked by the kernel, which has the primitive at hand
            // (a shape rule runs at every replay; looking the primitive up here cost a cache
            // lookup per node and call).
            if (a.with_bias)
              ATH_CHECK(in[2].dim() == 1 && in[2].shape()[0] == a.weight_shape[0], ShapeError,
                        "bias of shape {} for {} output channels", to_string(in[2].shape()),
                        a.weight_shape[0]);
            const Shape out = output_shape(a);
            if (a.residual)
              ATH_CHECK(in.back().shape() == out, ShapeError,
                        "residual of shape {}, expected the output's {}",
                        to_string(in.back().shape()), to_string(out));
            return OutputSpec{{{out, kFloat32}}, kFloat32};
          },
      .not_differentiable = kInference,
  });
  return op;
}

const Op<BlockedLayoutAttrs>& op_to_blocked() {
  static const auto& op = define_op<BlockedLayoutAttrs>({
      .name = "to_blocked",
      .infer =
          [](TensorSpan in, const BlockedLayoutAttrs& a) {
            check_layout(a.layout);
            check_float32(in[0], "the input");
            const auto nchw = logical_shape(in[0], ActivationLayout::Nchw, 0, "to_blocked");
            return OutputSpec{{{layout_shape(nchw, a.layout), kFloat32}}, kFloat32};
          },
      .not_differentiable = kInference,
  });
  return op;
}

const Op<BlockedLayoutAttrs>& op_from_blocked() {
  static const auto& op = define_op<BlockedLayoutAttrs>({
      .name = "from_blocked",
      .infer =
          [](TensorSpan in, const BlockedLayoutAttrs& a) {
            check_layout(a.layout);
            check_float32(in[0], "the input");
            const auto nchw = logical_shape(in[0], a.layout, a.channels, "from_blocked");
            ATH_CHECK(
                a.layout == ActivationLayout::Nchw || a.channels == 0 || a.channels == nchw[1],
                ShapeError, "from_blocked: {} channels asked of a tensor with {}", a.channels,
                nchw[1]);
            return OutputSpec{{{layout_shape(nchw, ActivationLayout::Nchw), kFloat32}}, kFloat32};
          },
      .not_differentiable = kInference,
  });
  return op;
}

const Op<PoolBlockedAttrs>& op_pool_blocked() {
  static const auto& op = define_op<PoolBlockedAttrs>({
      .name = "pool_blocked",
      .infer =
          [](TensorSpan in, const PoolBlockedAttrs& a) {
            check_float32(in[0], "the input");
            check_layout(a.layout);
            // Blocked layouts: the channel count is the padded one (pooling keeps it).
            const int64_t blocked_channels =
                in[0].dim() == 5 ? in[0].shape()[1] * in[0].shape()[4] : 0;
            auto nchw = logical_shape(in[0], a.layout, blocked_channels, "pool_blocked");
            for (std::size_t i = 0; i < 2; ++i) {
              ATH_CHECK(a.kernel[i] >= 1 && a.stride[i] >= 1 && a.pad_l[i] >= 0 &&
                            a.pad_r[i] >= 0 && a.pad_l[i] < a.kernel[i] && a.pad_r[i] < a.kernel[i],
                        ValueError, "bad pooling window (kernel, stride, padding)");
              const int64_t span = nchw[2 + i] + a.pad_l[i] + a.pad_r[i];
              ATH_CHECK(span >= a.kernel[i], ShapeError, "pooling window larger than the input");
              nchw[2 + i] = (span - a.kernel[i]) / a.stride[i] + 1;
            }
            return OutputSpec{{{layout_shape(nchw, a.layout), kFloat32}}, kFloat32};
          },
      .not_differentiable = kInference,
  });
  return op;
}

Tensor conv_pack_weight(const Tensor& weight, const ConvBlockedAttrs& attrs) {
  return call1(op_conv_pack_weight(), {weight}, attrs);
}

Tensor conv_blocked(const Tensor& x, const Tensor& packed_weight, const std::optional<Tensor>& bias,
                    const std::optional<Tensor>& residual, const ConvBlockedAttrs& attrs) {
  std::vector<Tensor> in{x, packed_weight};
  if (bias) in.push_back(*bias);
  if (residual) in.push_back(*residual);
  return call(op_conv_blocked(), TensorSpan(in), attrs)[0];
}

Tensor to_blocked(const Tensor& x, ActivationLayout layout) {
  return call1(op_to_blocked(), {x}, BlockedLayoutAttrs{.layout = layout});
}

Tensor from_blocked(const Tensor& x, ActivationLayout layout, int64_t channels) {
  return call1(op_from_blocked(), {x}, BlockedLayoutAttrs{.layout = layout, .channels = channels});
}

Tensor pool_blocked(const Tensor& x, const PoolBlockedAttrs& attrs) {
  return call1(op_pool_blocked(), {x}, attrs);
}

}  // namespace ath
