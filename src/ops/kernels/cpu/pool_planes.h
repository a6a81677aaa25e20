// What the pooling kernels (pool.cpp, pool_max.cpp) share: a [N, C, H, W] batch seen as N*C
// independent planes, and the loop that hands whole planes to threads. One thread owns each
// plane, so a backward scatter needs no atomics and sums keep a fixed order: results do not
// depend on the thread count.
#pragma once

#include <algorithm>
#include <cstdint>

#include "athanor/core/parallel.h"
#include "athanor/tensor/tensor.h"

namespace ath::kernels {

struct Planes {
  int64_t count, in_h, in_w, out_h, out_w;
};

// The planes of a pooling op from its (pre-pooling) input and (pooled) output.
inline Planes planes(const Tensor& in, const Tensor& out) {
  return {in.shape()[0] * in.shape()[1], in.shape()[2], in.shape()[3], out.shape()[2],
          out.shape()[3]};
}

// Runs fn(begin, end) over ranges of planes, each range a task for one thread: enough planes
// to hold ~32K elements of work (`plane_work` each), so small tensors stay on one thread.
template <class Fn>
void for_plane_ranges(int64_t count, int64_t plane_work, Fn&& fn) {
  parallel_for(0, count, std::max<int64_t>(1, 32768 / std::max<int64_t>(plane_work, 1)), fn);
}

// Runs fn(plane) over all planes, a few per task.
template <class Fn>
void for_planes(int64_t count, int64_t plane_work, Fn&& fn) {
  for_plane_ranges(count, plane_work, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) fn(p);
  });
}

// max_pool2d_backward_masked's scatter (pool_max.cpp) for float32 planes [begin, end): gp, ip
// and pp (pooled gradient, indices, pooled values) and dx (the pre-pool gradient) point at plane
// 0 of their tensors. The op's own kernel and bits, for a kernel that consumes the pre-pool
// gradient a plane at a time (conv_pool_weight_grad.cpp).
void max_unpool_masked_planes_f32(const float* gp, const int64_t* ip, const float* pp, float* dx,
                                  int64_t begin, int64_t end, const Planes& p);

}  // namespace ath::kernels
