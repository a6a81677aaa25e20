// The three computations behind every convolution op, on contiguous NCHW tensors:
//
//   forward:          dst[n, o]      = sum_{c, kh, kw} src[n, c, .] * w[o, c, kh, kw] (+ bias[o])
//   backward_data:    src_grad[n, c] = the adjoint of forward in src (a transposed convolution)
//   backward_weights: w_grad[o, c]   = sum_{n, oh, ow} src * dst_grad (+ bias_grad[o])
//
// all over one forward geometry (ConvGeometry). The oneDNN versions (float32, bfloat16) return
// false when oneDNN cannot express the geometry (a bottom/right padding <= -stride, which only a
// transposed convolution with a large output_padding produces); the direct loops take anything.
// Memory contract: every output element is written once (no accumulation into existing data);
// inputs are only read.
#pragma once

#include "athanor/ops/conv.h"
#include "athanor/ops/conv_pool.h"
#include "athanor/tensor/tensor.h"

namespace ath::kernels {

struct ConvGeometry {
  int64_t n = 0, c = 0, h = 0, w = 0;  // forward input
  int64_t o = 0, kh = 0, kw = 0;       // output channels, kernel
  int64_t oh = 0, ow = 0;              // forward output
  ConvAttrs attrs;                     // stride, padding, dilation, groups
  bool relu = false;                   // forward: a ReLU epilogue (convolution_relu)
};

// src/dst are the forward convolution's input and output shapes ([N, C, H, W], [N, O, OH, OW]).
// The weight is [O, C/groups, kh, kw] in both cases (a transposed convolution's weight
// [C_in, C_out/groups, kh, kw] is exactly its underlying forward convolution's).
ConvGeometry make_geometry(const Shape& src, const Shape& weight, const Shape& dst,
                           const ConvAttrs& attrs);

bool conv_forward_dnnl(const Tensor& src, const Tensor& w, const Tensor* bias, const Tensor& dst,
                       const ConvGeometry& g);
bool conv_backward_data_dnnl(const Tensor& dst_grad, const Tensor& w, const Tensor& src_grad,
                             const ConvGeometry& g);
bool conv_backward_weights_dnnl(const Tensor& src, const Tensor& dst_grad, const Tensor& w_grad,
                                const Tensor* bias_grad, const ConvGeometry& g);

// Few-channel float32 convolutions (a first layer where conv_pool_trainable holds, groups 1,
// dilation 1): the sums of the kernels the graph compiler's conv_pool_train pass fuses them into
// (conv_few_channels.cpp, conv_pool_weight_grad.cpp), so an eager step and a compiled one sum in
// one order. Each returns false where it does not apply (the weight gradient also needs stride 1
// and at most kMaxConvPoolTaps taps).
bool few_channel_convolution(const ConvGeometry& g);
bool conv_forward_few_channels(const Tensor& x, const Tensor& w, const Tensor* bias,
                               const Tensor& y, const ConvGeometry& g);
bool conv_backward_weights_few_channels(const Tensor& x, const Tensor& dy, const Tensor& dw,
                                        const Tensor* db, const ConvGeometry& g);

// float32 and float64 (accumulating in double).
void conv_forward_direct(const Tensor& src, const Tensor& w, const Tensor* bias, const Tensor& dst,
                         const ConvGeometry& g);
void conv_backward_data_direct(const Tensor& dst_grad, const Tensor& w, const Tensor& src_grad,
                               const ConvGeometry& g);
void conv_backward_weights_direct(const Tensor& src, const Tensor& dst_grad, const Tensor& w_grad,
                                  const Tensor* bias_grad, const ConvGeometry& g);

}  // namespace ath::kernels
