// The blocked-layout inference ops (conv_blocked.h): shape rules and public functions. The
// kernels are oneDNN primitives (kernels/cpu/conv_blocked_dnnl.cpp).
#include "athanor/ops/conv_blocked.h"

#include "../kernels/cpu/conv_blocked_dnnl.h"
#include "athanor/core/cpu_isa.h"
#include "athanor/ops/dispatch.h"

namespace ath {

namespace {

constexpr const char* kInference = "an inference layout op (graph/passes.h: blocked_layout)";

int64_t blocks(int64_t channels, int64_t block) { return (channels + block - 1) / block; }

Shape layout_shape(int64_t n, int64_t c, int64_t h, int64_t w, int64_t block) {
  if (block == 0) return {n, c, h, w};
  return {n, blocks(c, block), h, w, block};
}

void check_float32(const Tensor& t, const char* what) {
  ATH_CHECK(t.dtype() == kFloat32, DTypeError, "{} must be float32, got {}", what,
            dtype_name(t.dtype()));
}

void check_block(int64_t block) {
  ATH_CHECK(block == 8 || block == 16, ValueError, "channel block must be 8 or 16, got {}", block);
}

void check_attrs(const ConvBlockedAttrs& a) {
  ATH_CHECK(a.conv.groups == 1 && !a.conv.transposed, ValueError,
            "blocked convolutions take groups = 1, not transposed");
  if (a.src_block != 0) check_block(a.src_block);
  if (a.dst_block != 0) check_block(a.dst_block);
  ATH_CHECK(a.weight_shape[1] == a.src_shape[1], ShapeError,
            "weight of shape [{}, {}, {}, {}] does not match the input's {} channels",
            a.weight_shape[0], a.weight_shape[1], a.weight_shape[2], a.weight_shape[3],
            a.src_shape[1]);
}

Shape output_shape(const ConvBlockedAttrs& a) {
  const auto [oh, ow] = kernels::conv_blocked_output_size(a);
  return layout_shape(a.src_shape[0], a.weight_shape[0], oh, ow, a.dst_block);
}

}  // namespace

int64_t conv_channel_block() { return cpu_isa() >= CpuIsa::Avx512 ? 16 : 8; }

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
            const Shape src = layout_shape(s[0], s[1], s[2], s[3], a.src_block);
            ATH_CHECK(in[0].shape() == src, ShapeError, "input of shape {}, expected {}",
                      to_string(in[0].shape()), to_string(src));
            ATH_CHECK(in[1].numel() * 4 == kernels::conv_packed_weight_bytes(a), ShapeError,
                      "packed weight of {} elements was packed for another convolution",
                      in[1].numel());
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
            check_block(a.block);
            check_float32(in[0], "the input");
            ATH_CHECK(in[0].dim() == 4, ShapeError, "expected [N, C, H, W], got {}",
                      to_string(in[0].shape()));
            const Shape& s = in[0].shape();
            return OutputSpec{{{layout_shape(s[0], s[1], s[2], s[3], a.block), kFloat32}},
                              kFloat32};
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
            check_float32(in[0], "the input");
            const Shape& s = in[0].shape();
            ATH_CHECK(in[0].dim() == 5 && (s[4] == 8 || s[4] == 16) &&
                          blocks(a.channels, s[4]) == s[1] && a.channels > 0,
                      ShapeError, "expected a blocked [N, C/b, H, W, b] of {} channels, got {}",
                      a.channels, to_string(s));
            return OutputSpec{{{{s[0], a.channels, s[2], s[3]}, kFloat32}}, kFloat32};
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
            const Shape& s = in[0].shape();
            ATH_CHECK(in[0].dim() == 5 && (s[4] == 8 || s[4] == 16), ShapeError,
                      "expected a blocked [N, C/b, H, W, b], got {}", to_string(s));
            Shape out = s;
            for (int i = 0; i < 2; ++i) {
              const auto u = static_cast<std::size_t>(i);
              ATH_CHECK(a.kernel[u] >= 1 && a.stride[u] >= 1 && a.pad_l[u] >= 0 &&
                            a.pad_r[u] >= 0 && a.pad_l[u] < a.kernel[u] && a.pad_r[u] < a.kernel[u],
                        ValueError, "bad pooling window (kernel, stride, padding)");
              const int64_t span = s[static_cast<std::size_t>(2 + i)] + a.pad_l[u] + a.pad_r[u];
              ATH_CHECK(span >= a.kernel[u], ShapeError, "pooling window larger than the input");
              out[static_cast<std::size_t>(2 + i)] = (span - a.kernel[u]) / a.stride[u] + 1;
            }
            return OutputSpec{{{out, kFloat32}}, kFloat32};
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

Tensor to_blocked(const Tensor& x, int64_t block) {
  return call1(op_to_blocked(), {x}, BlockedLayoutAttrs{.block = block});
}

Tensor from_blocked(const Tensor& x, int64_t channels) {
  return call1(op_from_blocked(), {x},
               BlockedLayoutAttrs{.block = x.dim() == 5 ? x.shape()[4] : 0, .channels = channels});
}

Tensor pool_blocked(const Tensor& x, const PoolBlockedAttrs& attrs) {
  return call1(op_pool_blocked(), {x}, attrs);
}

}  // namespace ath
