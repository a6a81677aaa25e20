// What the blocked convolution's shape rule needs from its oneDNN kernels: the size of the
// packed weight oneDNN chose for a geometry (conv_blocked.h). Memory contract of the kernels
// (conv_blocked_dnnl.cpp): inputs are only read; each output element is written once, except
// that a residual is first copied into the output and the convolution then adds to it.
#pragma once

#include <cstdint>

#include "athanor/ops/conv_blocked.h"

namespace ath::kernels {

// Bytes of the packed weight of the blocked convolution `a` describes (float32).
int64_t conv_packed_weight_bytes(const ConvBlockedAttrs& a);
// [OH, OW] of that convolution.
std::array<int64_t, 2> conv_blocked_output_size(const ConvBlockedAttrs& a);

}  // namespace ath::kernels
