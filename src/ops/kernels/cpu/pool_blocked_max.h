// A direct kernel for the common blocked max pool (pool_blocked.h's op with a 2x2 / stride-2
// window, as in W2's CNN): non-overlapping windows, no padding, nChw16c or nChw8c.
//
// Memory contract: reads each window's elements once, writes each output element once; no
// scratch. The kernel runs on the calling thread below ~64K input elements (one image of a small
// CNN: the input is in the caller's caches from the convolution before, and a fork cost more
// than the pooling) and splits output rows over the threads above.
#pragma once

#include "athanor/ops/conv_blocked.h"
#include "athanor/tensor/tensor.h"

namespace ath::kernels {

// Pools x into y (both blocked float32, dense) when `a` is a max pool this kernel takes:
// kernel == stride, no padding, a Blocked8 or Blocked16 layout. Returns false, touching
// nothing, otherwise (the caller runs oneDNN's pooling).
bool pool_blocked_max_direct(const Tensor& x, Tensor& y, const PoolBlockedAttrs& a);

}  // namespace ath::kernels
