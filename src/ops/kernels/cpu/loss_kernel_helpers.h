// Helpers shared by the class-index loss kernels (cross_entropy, nll_loss): the [outer, C, inner]
// view of the input, checked target access, and the fixed work partition that makes the
// reductions independent of the thread count.
#pragma once

#include <algorithm>
#include <cstdint>

#include "athanor/core/parallel.h"
#include "athanor/tensor/tensor.h"
#include "common/nn_common.h"

namespace ath::kernels {

// x as [outer, C, inner] around the class dim (dim 1; dim 0 of a 1-D input). A position is one
// (outer, inner) pair: position p = o * inner + i, as in the row-major target.
struct ClassLayout {
  int64_t outer = 1, c = 1, inner = 1;
  int64_t positions() const { return outer * inner; }
};

inline ClassLayout class_layout(const Shape& s) {
  if (s.size() == 1) return {1, s[0], 1};
  ClassLayout l{s[0], s[1], 1};
  for (std::size_t d = 2; d < s.size(); ++d) l.inner *= s[d];
  return l;
}

// Checks every target (int64, int32 or uint8) is in [0, classes) or equals ignore_index, before
// anything reads through one, then calls fn(const I* targets) on the dense target data.
template <class Fn>
void with_targets(const Tensor& target, int64_t classes, int64_t ignore_index, const Fn& fn) {
  Tensor t = dense(target);
  auto run = [&]<class I>() {
    const I* p = static_cast<const I*>(t.data_ptr());
    const int64_t n = t.numel();
    for (int64_t k = 0; k < n; ++k) {
      const auto v = static_cast<int64_t>(p[k]);
      ATH_CHECK(v == ignore_index || (v >= 0 && v < classes), IndexError,
                "Target {} is out of bounds: expected a class in [0, {}) or ignore_index {} "
                "(element {} of target of shape {})",
                v, classes, ignore_index, k, to_string(t.shape()));
    }
    fn(p);
  };
  switch (t.dtype()) {
    case kInt64:
      return run.template operator()<int64_t>();
    case kInt32:
      return run.template operator()<int32_t>();
    default:
      return run.template operator()<uint8_t>();
  }
}

// Work is split into fixed blocks (the unit of parallelism and of partial sums), sized from
// the problem alone; blocks run in parallel only past kPointwiseGrain elements in all, so small
// batches stay on the calling thread.
inline constexpr int64_t kLossBlockElems = 8192;

template <class Fn>
void for_each_block(int64_t blocks, int64_t elems_per_block, const Fn& fn) {
  const int64_t grain =
      std::max<int64_t>(1, kPointwiseGrain / std::max<int64_t>(elems_per_block, 1));
  parallel_for(0, blocks, grain, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) fn(k);
  });
}

}  // namespace ath::kernels
