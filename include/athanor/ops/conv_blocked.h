// Inference convolutions on the activation layouts oneDNN's fastest kernels read and write:
// what the inference runtime's "blocked_layout" pass (graph/passes.h) rewrites a chain of float32
// convolutions into, so that activations stay in that layout from one convolution to the next,
// and weights are reordered into oneDNN's format once, when the graph is built, instead of at
// every call.
//
//   #include "athanor/ops/conv_blocked.h"
//   Tensor x = randn({1, 32, 14, 14}), w = randn({64, 32, 3, 3}), b = randn({64});
//   const ActivationLayout l = inference_activation_layout();          // NHWC on AVX-512
//   ConvBlockedAttrs a{.conv = {.pad_l = {1, 1}, .pad_r = {1, 1}}, .src_shape = {1, 32, 14, 14},
//                      .weight_shape = {64, 32, 3, 3}, .src_layout = l, .dst_layout = l,
//                      .with_bias = true, .relu = true};
//   Tensor packed = conv_pack_weight(w, a);                             // once
//   Tensor yl = conv_blocked(to_blocked(x, l), packed, b, std::nullopt, a);
//   Tensor want = relu(conv2d(x, w, b, {.padding = 1}));             // another summation order
//   assert(allclose(from_blocked(yl, l, 64), want, {.rtol = 1e-4, .atol = 1e-4}));
//
// The layouts, as ordinary float32 tensors:
// - Nchw: [N, C, H, W], athanor's own.
// - Nhwc: [N, H, W, C] (channels last): oneDNN 2.6's brgemm convolutions on AVX-512 (10-45%
//   faster than its blocked direct kernels at ResNet-18's shapes, most at 7x7 and 14x14), and its
//   AVX2 direct kernels.
// - Blocked8 / Blocked16 (nChw8c / nChw16c): [N, ceil(C / b), H, W, b]; channel c of pixel (h, w)
//   is element [n, c / b, h, w, c % b]. Channels past C (the last block's padding) hold zeros,
//   and every op here keeps them zero. A Nchw input with few channels (an image's 1 or 3) may be
//   read directly by a blocked convolution (oneDNN's first-layer kernels).
// Which one a host uses: inference_activation_layout() (measured: bench/inference); a graph with
// 3x3 stride-1 convolutions that Winograd can run uses Blocked16 on AVX-512 instead
// (winograd_eligible; its kernels exist only for nChw16c).
//
// None of these ops is differentiable: they exist for inference, after training.
#pragma once

#include <array>
#include <optional>

#include "athanor/ops/conv.h"
#include "athanor/tensor/tensor.h"

namespace ath {

enum class ActivationLayout : int64_t { Nchw = 0, Nhwc = 1, Blocked8 = 8, Blocked16 = 16 };

// The layout this host's convolutions run fastest on: Nhwc with AVX-512, Blocked8 with AVX2
// (oneDNN 2.6's brgemm convolutions need AVX-512; its AVX2 kernels have no nChw16c form).
ActivationLayout inference_activation_layout();
// Whether oneDNN's Winograd convolution may run this convolution on this host: AVX-512,
// 3x3, stride 1, no dilation, input and output channels multiples of 16. ATH_CONV_WINOGRAD=0
// turns it off (for comparisons).
bool winograd_eligible(const ConvAttrs& conv, const std::array<int64_t, 4>& weight_shape);
// The physical shape of a logical [N, C, H, W] in `layout`.
Shape layout_shape(const std::array<int64_t, 4>& nchw, ActivationLayout layout);

struct ConvBlockedAttrs {
  ConvAttrs conv;                         // stride, padding, dilation; groups 1, not transposed
  std::array<int64_t, 4> src_shape{};     // logical [N, C, H, W] of the input
  std::array<int64_t, 4> weight_shape{};  // [O, C, kh, kw]
  ActivationLayout src_layout = ActivationLayout::Nchw;
  ActivationLayout dst_layout = ActivationLayout::Nchw;
  bool with_bias = false;  // input 2 is a bias [O]
  bool residual = false;   // last input: added to the convolution (same layout and shape as the
                           // output), before the relu
  bool relu = false;       // relu(conv + bias (+ residual))
  // oneDNN's Winograd algorithm (AVX-512, Blocked16, 3x3 stride 1): 1.3-2.4x the direct
  // kernels' speed at ResNet's shapes, with a rounding error a few times larger (still ~1e-6
  // relative to the output's scale).
  bool winograd = false;
  // A non-overlapping max pool (kernel = stride = pool, no padding, floor) of the result, in a
  // blocked output layout, without the pool's input ever being a graph value: a batch-1
  // convolution split between threads (conv_blocked_dnnl.cpp) pools each thread's share of the
  // channels where that thread computed it. {1, 1}: none. Not with a residual.
  std::array<int64_t, 2> pool{1, 1};
  bool operator==(const ConvBlockedAttrs&) const = default;
};

struct BlockedLayoutAttrs {
  ActivationLayout layout = ActivationLayout::Nhwc;
  int64_t channels = 0;  // from_blocked: the logical channel count C
  bool operator==(const BlockedLayoutAttrs&) const = default;
};

struct PoolBlockedAttrs {
  ActivationLayout layout = ActivationLayout::Nhwc;
  std::array<int64_t, 2> kernel{1, 1}, stride{1, 1}, pad_l{0, 0}, pad_r{0, 0};
  bool max = true;  // false: average over the window's in-bounds elements
  bool operator==(const PoolBlockedAttrs&) const = default;
};

// (weight [O, C, kh, kw]) -> the weight in the format the blocked convolution of `attrs` reads:
// a flat float32 tensor (oneDNN's blocked weight layout, padded; its size is oneDNN's).
const Op<ConvBlockedAttrs>& op_conv_pack_weight();
// (x, packed weight[, bias][, residual]) -> y, in the layouts the attributes name.
const Op<ConvBlockedAttrs>& op_conv_blocked();
// Logical [N, C, H, W] (Nchw) -> another layout, and back.
const Op<BlockedLayoutAttrs>& op_to_blocked();
const Op<BlockedLayoutAttrs>& op_from_blocked();
// Max or average pooling in a non-Nchw layout (no indices: inference), same layout out.
const Op<PoolBlockedAttrs>& op_pool_blocked();

Tensor conv_pack_weight(const Tensor& weight, const ConvBlockedAttrs& attrs);
Tensor conv_blocked(const Tensor& x, const Tensor& packed_weight, const std::optional<Tensor>& bias,
                    const std::optional<Tensor>& residual, const ConvBlockedAttrs& attrs);
Tensor to_blocked(const Tensor& x, ActivationLayout layout);
Tensor from_blocked(const Tensor& x, ActivationLayout layout, int64_t channels);
Tensor pool_blocked(const Tensor& x, const PoolBlockedAttrs& attrs);

}  // namespace ath
