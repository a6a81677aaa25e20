// One row of a (scaled, masked) softmax in float32, for kernels compiled per ISA
// (isa_dispatch.h): attention_softmax's rows and self_attention's score rows.
//
//   softmax_row_f32(x, y, n, len, scale);   // y[j] = softmax(scale * x[:n])[j], 0 for j >= n
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

#include "isa_dispatch.h"
#include "nn_common.h"

namespace ath::kernels {

// 16 float lanes as one GCC vector, which each ISA copy compiles to its widest registers: GCC
// left lane_max's and lane_sum's 16-element arrays scalar here (16 scalar accumulators, a third
// of the attention step's softmax time). The lanes keep those helpers' exact order — element
// j + l into lane l, the tail into the first lanes, the same tree — so the results are theirs,
// bit for bit. (Vectors appear only inside function bodies: none crosses a call, so no ABI
// depends on the ISA.)
typedef float Lanes16 __attribute__((vector_size(64)));
inline constexpr int kLanes = 16;

// max over j < n of scale * x[j], as lane_max computes it. x may be read up to `cap` >= n: a
// last partial block within it is one vector with the lanes past n set to -inf (max's identity).
ATH_ISA_BODY float row_max_f32(const float* x, int64_t n, int64_t cap, float scale) {
  Lanes16 acc;
  Lanes16 lane;
  for (int l = 0; l < kLanes; ++l) {
    acc[l] = -std::numeric_limits<float>::infinity();
    lane[l] = float(l);
  }
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    Lanes16 v;
    std::memcpy(&v, x + j, sizeof v);
    v *= scale;
    acc = acc < v ? v : acc;  // std::max(acc, v), lane by lane
  }
  if (j < n && j + kLanes <= cap) {
    Lanes16 v;
    std::memcpy(&v, x + j, sizeof v);
    v *= scale;
    v = lane < float(n - j) ? v : acc;
    acc = acc < v ? v : acc;
    j = n;
  }
  float lanes[kLanes];
  std::memcpy(lanes, &acc, sizeof lanes);
  for (int l = 0; j < n; ++j, ++l) lanes[l] = std::max(lanes[l], scale * x[j]);
  for (int w = kLanes / 2; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) lanes[l] = std::max(lanes[l], lanes[l + w]);
  return lanes[0];
}

// sum over j < n of x[j], as lane_sum computes it, for x >= 0 whose entries n..cap-1 are +0: a
// last partial block is then summed as a whole vector (adding +0 to a lane changes no sum of
// non-negative values).
ATH_ISA_BODY float row_sum_f32(const float* x, int64_t n, int64_t cap) {
  Lanes16 acc = {};
  const int64_t full = n % kLanes != 0 && n + (kLanes - n % kLanes) <= cap
                           ? n + (kLanes - n % kLanes)
                           : n - n % kLanes;
  int64_t j = 0;
  for (; j < full; j += kLanes) {
    Lanes16 v;
    std::memcpy(&v, x + j, sizeof v);
    acc += v;
  }
  float lanes[kLanes];
  std::memcpy(lanes, &acc, sizeof lanes);
  for (int l = 0; j < n; ++j, ++l) lanes[l] += x[j];
  for (int w = kLanes / 2; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) lanes[l] += lanes[l + w];
  return lanes[0];
}

// y[0, n) = softmax(scale * x[0, n)) and y[n, len) = 0; x and y hold len >= n entries. The kept
// entries are computed in whole vectors up to the next multiple of 16 within the row (those past
// n are computed and then zeroed), so no scalar tail runs exp: a causal row's n is rarely a
// multiple of 16. y may be x.
ATH_ISA_BODY void softmax_row_f32(const float* x, float* y, int64_t n, int64_t len, float scale) {
  const float m = row_max_f32(x, n, len, scale);
  const int64_t padded = std::min(len, (n + kLanes - 1) / kLanes * kLanes);
  for (int64_t j = 0; j < padded; ++j) y[j] = exp_fast(scale * x[j] - m);
  for (int64_t j = n; j < padded; ++j) y[j] = 0.0f;
  const float inv = 1.0f / row_sum_f32(y, n, padded);
  for (int64_t j = 0; j < n; ++j) y[j] *= inv;
  for (int64_t j = padded; j < len; ++j) y[j] = 0.0f;
}

}  // namespace ath::kernels
