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

// The same kernel on raw memory of any size, on the calling thread: `planes` (image, channel
// block) planes of [ih, iw, block] floats at x, each pooled by non-overlapping kh x kw windows
// (floor) into [ih / kh, iw / kw, block] at y. block: 8 or 16. (conv_blocked's pooled form runs
// it on each thread's share.)
void max_pool_blocked_planes(const float* x, float* y, int64_t planes, int64_t ih, int64_t iw,
                             int64_t kh, int64_t kw, int64_t block);

}  // namespace ath::kernels
