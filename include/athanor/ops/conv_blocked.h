// Inference convolutions on oneDNN's channel-blocked layout: what the inference runtime's
// "blocked_layout" pass (graph/passes.h) rewrites a chain of float32 convolutions into, so that
// activations stay in the layout oneDNN's direct kernels read and write (nChw16c on AVX-512
// hosts, nChw8c on AVX2) from one convolution to the next, and weights are reordered once, when
// the graph is built, instead of at every call.
//
//   #include "athanor/ops/conv_blocked.h"
//   Tensor x = randn({1, 32, 14, 14}), w = randn({64, 32, 3, 3}), b = randn({64}), r = ...;
//   const int64_t blk = conv_channel_block();                          // 16 or 8
//   ConvBlockedAttrs a{.conv = {.pad_l = {1, 1}, .pad_r = {1, 1}}, .src_shape = {1, 32, 14, 14},
//                      .weight_shape = {64, 32, 3, 3}, .src_block = blk, .dst_block = blk,
//                      .relu = true};
//   Tensor packed = conv_pack_weight(w, a);                            // once
//   Tensor xb = to_blocked(x, blk);                                    // [1, 2, 14, 14, 16]
//   Tensor yb = conv_blocked(xb, packed, b, std::nullopt, a);         // [1, 4, 14, 14, 16]
//   assert(allclose(from_blocked(yb, 64), relu(conv2d(x, w, b, {.padding = 1}))));
//
// A blocked tensor is an ordinary float32 tensor of shape [N, ceil(C / b), H, W, b]: channel c
// of pixel (h, w) is element [n, c / b, h, w, c % b]. Channels past C (the last block's padding)
// hold zeros; every op here keeps them zero, so pointwise ops and reductions over H and W may
// run on a blocked tensor as on any other (relu(0) = 0, 0 + 0 = 0, mean(0) = 0).
//
// None of these ops is differentiable: they exist for inference, after training.
#pragma once

#include <array>
#include <optional>

#include "athanor/ops/conv.h"
#include "athanor/tensor/tensor.h"

namespace ath {

// The channel block oneDNN's direct convolutions use on this host: 16 with AVX-512, else 8.
int64_t conv_channel_block();

struct ConvBlockedAttrs {
  ConvAttrs conv;                         // stride, padding, dilation; groups 1, not transposed
  std::array<int64_t, 4> src_shape{};     // logical [N, C, H, W] of the input
  std::array<int64_t, 4> weight_shape{};  // [O, C, kh, kw]
  int64_t src_block = 0;                  // 0: the input is plain NCHW; else its block
  int64_t dst_block = 0;                  // 0: the output is plain NCHW; else its block
  bool with_bias = false;                 // input 2 is a bias [O]
  bool residual = false;                  // last input: added to the convolution (same layout
                                          // and shape as the output), before the relu
  bool relu = false;                      // relu(conv + bias (+ residual))
  bool operator==(const ConvBlockedAttrs&) const = default;
};

struct BlockedLayoutAttrs {
  int64_t block = 16;
  int64_t channels = 0;  // from_blocked: the logical channel count C
  bool operator==(const BlockedLayoutAttrs&) const = default;
};

struct PoolBlockedAttrs {
  std::array<int64_t, 2> kernel{1, 1}, stride{1, 1}, pad_l{0, 0}, pad_r{0, 0};
  bool max = true;  // false: average over the window's in-bounds elements
  bool operator==(const PoolBlockedAttrs&) const = default;
};

// (weight [O, C, kh, kw]) -> the weight in the format the blocked convolution of `attrs` reads:
// a flat float32 tensor (oneDNN's blocked weight layout, padded; its size is oneDNN's).
const Op<ConvBlockedAttrs>& op_conv_pack_weight();
// (x, packed weight[, bias][, residual]) -> y, in the layouts the attributes name.
const Op<ConvBlockedAttrs>& op_conv_blocked();
// [N, C, H, W] -> [N, ceil(C / block), H, W, block] and back.
const Op<BlockedLayoutAttrs>& op_to_blocked();
const Op<BlockedLayoutAttrs>& op_from_blocked();
// Max or average pooling of a blocked tensor (no indices: inference), blocked out.
const Op<PoolBlockedAttrs>& op_pool_blocked();

Tensor conv_pack_weight(const Tensor& weight, const ConvBlockedAttrs& attrs);
Tensor conv_blocked(const Tensor& x, const Tensor& packed_weight, const std::optional<Tensor>& bias,
                    const std::optional<Tensor>& residual, const ConvBlockedAttrs& attrs);
Tensor to_blocked(const Tensor& x, int64_t block);
Tensor from_blocked(const Tensor& x, int64_t channels);
Tensor pool_blocked(const Tensor& x, const PoolBlockedAttrs& attrs);

}  // namespace ath
