// Rows of a (scaled, masked) softmax and of its backward in float32, for kernels compiled per ISA
// with a vector width W (lanes.h, ATH_ISA_DISPATCH_W): attention_softmax's rows and gradients.
//
//   softmax_row_f32<W>(x, y, n, len, scale);   // y[j] = softmax(scale * x[:n])[j], 0 for j >= n
//
// The kept entries run in whole 16-lane strips, and a last partial one as one masked vector while
// 16 entries from there stay within the row (a causal row's n is rarely a multiple of 16), so no
// scalar tail runs exp; only a row whose kept part reaches into its last partial strip has a
// scalar tail. Sums and maxima keep lane_sum's / lane_max's order, so the results are those of
// plain loops over nn_common.h's helpers, bit for bit, in every ISA copy.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

#include "exp_fast.h"
#include "isa_dispatch.h"
#include "lanes.h"

namespace ath::kernels {

// A row's first n of len entries as whole 16-lane strips [0, whole) and, when n is not a
// multiple of 16, a last partial strip at `whole`: one masked vector when the row holds 16
// entries from there (`masked`), else a scalar tail.
struct RowStrips {
  int64_t whole;
  bool masked;
};
inline RowStrips row_strips(int64_t n, int64_t len) {
  const int64_t whole = n - n % kLanes;
  return {whole, whole < n && whole + kLanes <= len};
}

// y[j] = 0 for j in [from, len).
template <int W>
ATH_ISA_BODY void zero_row_f32(float* y, int64_t from, int64_t len) {
  int64_t j = from;
  for (; j + kLanes <= len; j += kLanes) vstore(y + j, vsplat<W>(0.0f));
  for (; j < len; ++j) y[j] = 0.0f;
}

// y[0, n) = softmax(scale * x[0, n)) and y[n, len) = 0; x and y hold len >= n entries. y may be x.
template <int W>
ATH_ISA_BODY void softmax_row_f32(const float* x, float* y, int64_t n, int64_t len, float scale) {
  const auto [whole, masked] = row_strips(n, len);
  const F16<W> zero = vsplat<W>(0.0f);
  F16<W> mx = vsplat<W>(-std::numeric_limits<float>::infinity());
  for (int64_t j = 0; j < whole; j += kLanes) mx = vmax(mx, scale * vload<W>(x + j));
  if (masked) {  // lanes past n do not count
    mx = vmax(mx, vselect(first_lanes<W>(n - whole), scale * vload<W>(x + whole), mx));
  } else {
    for (int64_t j = whole, l = 0; j < n; ++j, ++l)
      set_lane(mx, int(l), std::max(get_lane(mx, int(l)), scale * x[j]));
  }
  const float m = hmax(mx);

  F16<W> acc = zero;
  for (int64_t j = 0; j < whole; j += kLanes) {
    const F16<W> e = exp_fast(scale * vload<W>(x + j) - m);
    acc = acc + e;
    vstore(y + j, e);
  }
  if (masked) {  // adding +0 changes no sum of non-negative values
    const F16<W> e =
        vselect(first_lanes<W>(n - whole), exp_fast(scale * vload<W>(x + whole) - m), zero);
    acc = acc + e;
    vstore(y + whole, e);
  } else {
    for (int64_t j = whole, l = 0; j < n; ++j, ++l) {
      y[j] = exp_fast(scale * x[j] - m);
      set_lane(acc, int(l), get_lane(acc, int(l)) + y[j]);
    }
  }
  const float inv = 1.0f / hsum(acc);

  for (int64_t j = 0; j < whole; j += kLanes) vstore(y + j, vload<W>(y + j) * inv);
  if (masked) {  // the masked lanes stay 0, even when inv is not finite
    vstore(y + whole, vselect(first_lanes<W>(n - whole), vload<W>(y + whole) * inv, zero));
  } else {
    for (int64_t j = whole; j < n; ++j) y[j] *= inv;
  }
  zero_row_f32<W>(y, masked ? whole + kLanes : n, len);
}

// o[0, n) = scale * y * (g - sum(g * y)) over a row's first n of len entries, o[n, len) = 0.
template <int W>
ATH_ISA_BODY void softmax_backward_row_f32(const float* g, const float* y, float* o, int64_t n,
                                           int64_t len, float scale) {
  const auto [whole, masked] = row_strips(n, len);
  const F16<W> zero = vsplat<W>(0.0f);
  F16<W> acc = zero;
  for (int64_t j = 0; j < whole; j += kLanes) acc = acc + vload<W>(g + j) * vload<W>(y + j);
  if (masked) {  // the tail's products go to the first lanes; the others keep their sums
    acc = vselect(first_lanes<W>(n - whole), acc + vload<W>(g + whole) * vload<W>(y + whole), acc);
  } else {
    for (int64_t j = whole, l = 0; j < n; ++j, ++l)
      set_lane(acc, int(l), get_lane(acc, int(l)) + g[j] * y[j]);
  }
  const float s = hsum(acc);

  for (int64_t j = 0; j < whole; j += kLanes)
    vstore(o + j, scale * vload<W>(y + j) * (vload<W>(g + j) - s));
  if (masked) {
    vstore(o + whole, vselect(first_lanes<W>(n - whole),
                              scale * vload<W>(y + whole) * (vload<W>(g + whole) - s), zero));
  } else {
    for (int64_t j = whole; j < n; ++j) o[j] = scale * y[j] * (g[j] - s);
  }
  zero_row_f32<W>(o, masked ? whole + kLanes : n, len);
}

}  // namespace ath::kernels
