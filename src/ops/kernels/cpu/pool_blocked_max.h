// A direct kernel for small blocked max pools (pool_blocked.h's op with a 2x2 / stride-2 window,
// as in W2's CNN at batch 1): non-overlapping windows, no padding, nChw16c or nChw8c, at most
// 64K input elements. There oneDNN's pooling primitive costs more in its per-call set-up than
// the pooling itself; on larger inputs it is as fast or faster (W2's second pool at batch 32:
// 43-45 us against 45-50 here), so those stay with it.
//
// Memory contract: reads each window's elements once, writes each output element once; no
// scratch; runs on the calling thread.
#pragma once

#include "athanor/ops/conv_blocked.h"
#include "athanor/tensor/tensor.h"

namespace ath::kernels {

// Pools x into y (both blocked float32, dense) when `a` is a max pool this kernel takes:
// kernel == stride, no padding, a Blocked8 or Blocked16 layout, a small input. Returns false,
// touching nothing, otherwise (the caller runs oneDNN's pooling).
bool pool_blocked_max_direct(const Tensor& x, Tensor& y, const PoolBlockedAttrs& a);

}  // namespace ath::kernels
