// Naive float64 references for convolutions and pooling: direct loops over every term, written
// from the definitions (PyTorch's), never calling the ops under test.
#pragma once

#include "athanor/athanor.h"

namespace ath::testing {

// A forward convolution's geometry; `attrs.transposed` is ignored here.
struct ConvRefGeometry {
  int64_t n, c, h, w, o, kh, kw, oh, ow;
  ConvAttrs a;
};

// Forward output size along one dim.
int64_t conv_ref_out(int64_t in, int64_t k, int64_t pl, int64_t pr, int64_t s, int64_t d);

// y = conv(x, w) + b; b may be undefined.
Tensor conv_ref(const Tensor& x, const Tensor& w, const Tensor& b, const ConvAttrs& a);
// y = conv_transpose(x, w) + b (the adjoint of conv in its input); a.pad_r already holds
// padding - output_padding.
Tensor conv_transpose_ref(const Tensor& x, const Tensor& w, const Tensor& b, const ConvAttrs& a);
// (grad_weight, grad_bias) of conv(x, w) for output gradient dy and kernel size k.
std::pair<Tensor, Tensor> conv_weight_grad_ref(const Tensor& x, const Tensor& dy,
                                               std::array<int64_t, 2> k, const ConvAttrs& a);

// (values, indices) of max pooling; indices as float64.
std::pair<Tensor, Tensor> max_pool_ref(const Tensor& x, const MaxPool2dAttrs& a);
Tensor avg_pool_ref(const Tensor& x, const AvgPool2dAttrs& a);
Tensor adaptive_avg_pool_ref(const Tensor& x, std::array<int64_t, 2> out);

}  // namespace ath::testing
