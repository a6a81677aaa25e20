// A first convolution (few input channels) with its ReLU and the max pooling after it, as one
// inference kernel: relu(conv2d(x, w, b)) followed by a max pool whose windows do not overlap
// (kernel == stride, no padding), written straight into the activation layout the next layer
// reads (conv_blocked.h). The inference runtime's "conv_pool" pass (graph/passes.h) makes it.
//
//   #include "athanor/ops/conv_pool.h"
//   Tensor x = randn({1, 1, 28, 28}), w = randn({32, 1, 3, 3}), b = randn({32});
//   ConvPoolAttrs a{.conv = {.pad_l = {1, 1}, .pad_r = {1, 1}}, .pool = {2, 2},
//                   .dst_layout = ActivationLayout::Blocked16};
//   Tensor y = conv_relu_max_pool(x, w, b, a);                 // [1, 2, 14, 14, 16]
//   Tensor want = max_pool2d(relu(conv2d(x, w, b, {.padding = 1})), {.kernel = {2, 2}});
//   assert(allclose(from_blocked(y, a.dst_layout, 32), want, {.rtol = 1e-5, .atol = 1e-5}));
//
// Why: a network's first layer reads an image of 1 or 3 channels. oneDNN's first-layer kernels
// do little work per call (W2's 1->32 3x3 convolution is 0.45 MFLOP at batch 1) and the pool
// after it is a primitive call and a parallel region of its own; together they took 7 us of the
// CNN's 30 us at batch 1. Here each thread computes a row of pooled outputs from the pool
// window's convolution outputs kept in registers (16 output channels a vector), so the
// convolution's output is never written and the pool costs one max per tap group.
//
// Contract: x is float32 NCHW [N, C, H, W] (C <= 4, the pass's rule; the kernel takes any C),
// w [O, C, kh, kw], bias [O] (optional); groups 1, dilation 1, any stride and padding. The
// pooled size is floor(conv_out / pool) per axis (PyTorch's floor mode; trailing rows and
// columns of the convolution output that fill no window are not computed). The output is the
// logical [N, O, PH, PW] in dst_layout (Nchw, Nhwc, Blocked8, Blocked16; blocked padding
// channels are zero). Each output is max over the window of relu(sum over c, kh, kw in a fixed
// order + bias): bits depend on neither the thread count nor the ISA. Not differentiable.
#pragma once

#include <array>
#include <optional>
#include <utility>

#include "athanor/ops/conv.h"
#include "athanor/ops/conv_blocked.h"
#include "athanor/tensor/tensor.h"

namespace ath {

// The first layers the graph compiler fuses in training (conv_pool_train): one input channel and
// a 3x3 filter (W2's). Eager float32 convolutions of that kind (groups 1, dilation 1) and their
// weight gradients (stride 1) run the fused kernels' own sums, so both sum in one order. Wider
// ones stay oneDNN's: at 3 channels the kernels measured 31% (3x3 forward) to 140% (3x3 weight
// gradient) slower than oneDNN on a 2-core AVX-512 Xeon, 45% for ResNet's 7x7 stride-2 layer.
constexpr bool conv_pool_trainable(int64_t channels, int64_t kh, int64_t kw) {
  return channels == 1 && kh == 3 && kw == 3;
}

struct ConvPoolAttrs {
  ConvAttrs conv;                     // stride and padding; groups 1, dilation 1, not transposed
  std::array<int64_t, 2> pool{2, 2};  // the max pool's kernel, equal to its stride
  ActivationLayout dst_layout = ActivationLayout::Nchw;
  bool operator==(const ConvPoolAttrs&) const = default;
};

// (x, weight[, bias]) -> max_pool(relu(conv2d(x, weight, bias))) in dst_layout.
const Op<ConvPoolAttrs>& op_conv_relu_max_pool();

Tensor conv_relu_max_pool(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias,
                          const ConvPoolAttrs& attrs);

// The training form: (x, weight[, bias]) -> (pooled, indices), both NCHW [N, O, PH, PW], as
// max_pool2d(relu(conv2d(x, weight, bias))) returns them (indices: int64, the winner's index in
// its plane of the convolution output; the first of equal maxima wins, and a NaN wins, as there).
// dst_layout must be Nchw. The graph compiler's conv_pool_train pass makes it from a training
// step's first convolution, relu and max pool, whose backward (max_pool2d_backward_masked, the
// weight gradient) reads only the pooled values and the indices: the convolution's output, its
// relu and the pool's read of them are never written to memory. Its sums are those an eager
// float32 conv2d makes where conv_pool_trainable holds (the same kernel), so the fused step keeps
// the eager step's bits. Not differentiable (the graph holds the backward already).
const Op<ConvPoolAttrs>& op_conv_relu_max_pool_indices();

// The weight and bias gradients behind conv_relu_max_pool_indices: (x, grad_pooled, indices,
// pooled) -> (grad_weight [O, C, kh, kw], grad_bias [O]), equal up to the order of the sums to
//   convolution_backward_weight(x, max_pool2d_backward_masked(grad_pooled, indices, pooled))
// (ops/conv.h), whose pre-pool gradient (4x the pooled bytes for a 2x2 pool, zero but at the
// windows' winners) is never written: each window's gradient is placed in a row of the pool's
// height in registers and multiplied into the taps there. `forward` is the forward's attributes
// (stride 1; the pool's windows as it made them), `kernel` the filter's size. Any indices are
// taken as max_pool2d_backward_masked takes them (its own scatter makes each image's pre-pool
// plane, in cache). The graph compiler's conv_pool_train pass makes it. Takes at most
// kMaxConvPoolTaps = C * kh * kw (a first layer's filter; 4 channels of 7x7 fit). Not
// differentiable.
inline constexpr int64_t kMaxConvPoolTaps = 196;
struct ConvPoolWeightGradAttrs {
  ConvPoolAttrs forward;
  std::array<int64_t, 2> kernel{1, 1};
  bool operator==(const ConvPoolWeightGradAttrs&) const = default;
};
const Op<ConvPoolWeightGradAttrs>& op_conv_relu_max_pool_weight_grad();

std::pair<Tensor, Tensor> conv_relu_max_pool_indices(const Tensor& x, const Tensor& weight,
                                                     const std::optional<Tensor>& bias,
                                                     const ConvPoolAttrs& attrs);

}  // namespace ath
