// Helpers shared by the indexing and shaping kernels: row-major walks over any shape with a
// multi-index, strided offsets, and reading index tensors with range checks.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "athanor/core/parallel.h"
#include "athanor/tensor/tensor.h"

namespace ath::kernels {

using Index = std::array<int64_t, kMaxDims>;

// Shape and strides with a 0-dim tensor seen as 1-D of size 1: torch's index ops (gather,
// scatter, index_select, sort) treat the two alike.
struct Geometry {
  Shape shape;
  Strides strides;
};
inline Geometry geometry(const Tensor& t) {
  if (t.dim() == 0) return {Shape{1}, Strides{1}};
  return {t.shape(), t.strides()};
}

// Calls f(k, idx) for the row-major positions k in [begin, end) of `shape`, with idx the
// multi-index of k (kept as an odometer, so each step costs O(1) amortized).
template <class F>
void for_each_index(const Shape& shape, int64_t begin, int64_t end, F&& f) {
  if (begin >= end) return;
  const int nd = static_cast<int>(shape.size());
  Index idx{};
  int64_t rem = begin;
  for (int d = nd - 1; d >= 0; --d) {
    idx[d] = rem % shape[d];
    rem /= shape[d];
  }
  for (int64_t k = begin; k < end; ++k) {
    f(k, idx);
    for (int d = nd - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

// sum_d idx[d] * strides[d], skipping dim `skip` (pass -1 to skip nothing).
inline int64_t offset_of(const Index& idx, const Strides& strides, int64_t skip = -1) {
  int64_t off = 0;
  for (std::size_t d = 0; d < strides.size(); ++d) {
    if (static_cast<int64_t>(d) != skip) off += idx[d] * strides[d];
  }
  return off;
}

// The values of an int32/int64 index tensor in row-major order, each checked against
// [0, size): an IndexError names the index, the dim and its size (the dispatcher adds the op).
inline std::vector<int64_t> read_indices(const Tensor& index, int64_t size, int64_t dim) {
  std::vector<int64_t> out(static_cast<std::size_t>(index.numel()));
  if (out.empty()) return out;
  Geometry g = geometry(index);
  auto read = [&]<class I>() {
    const I* p = static_cast<const I*>(index.data_ptr());
    for_each_index(g.shape, 0, index.numel(), [&](int64_t k, const Index& idx) {
      out[static_cast<std::size_t>(k)] = static_cast<int64_t>(p[offset_of(idx, g.strides)]);
    });
  };
  if (index.dtype() == kInt32) {
    read.template operator()<int32_t>();
  } else {
    ATH_CHECK(index.dtype() == kInt64, DTypeError, "index tensor must be int64 or int32, got {}",
              dtype_name(index.dtype()));
    read.template operator()<int64_t>();
  }
  for (int64_t v : out) {
    ATH_CHECK(v >= 0 && v < size, IndexError,
              "index {} is out of bounds for dimension {} with size {}", v, dim, size);
  }
  return out;
}

// Walks the positions outside `dim` (`rest`: the shape with dim set to 1) in blocks of up to
// 256, parallel across blocks. For each block, fn(count, bases) gets every position's base offset
// under each strides set (dim skipped). Callers then loop along dim outermost within the block:
// accesses stay row-local, and each position still sees its dim entries in ascending order, so
// accumulation order (and so the result) doesn't depend on how blocks map to threads.
template <std::size_t K, class F>
void for_each_rest_block(const Shape& rest, int64_t dim, const std::array<Strides, K>& sets,
                         int64_t work_per_position, F fn) {
  constexpr int64_t kBlock = 256;
  const int64_t grain =
      std::max<int64_t>(kBlock, kPointwiseGrain / std::max<int64_t>(1, work_per_position));
  parallel_for(0, numel(rest), grain, [&](int64_t b, int64_t e) {
    std::array<std::vector<int64_t>, K> bases;
    for (auto& v : bases) v.resize(static_cast<std::size_t>(kBlock));
    for (int64_t s = b; s < e; s += kBlock) {
      const int64_t count = std::min(kBlock, e - s);
      for_each_index(rest, s, s + count, [&](int64_t k, const Index& i) {
        for (std::size_t q = 0; q < K; ++q) {
          bases[q][static_cast<std::size_t>(k - s)] = offset_of(i, sets[q], dim);
        }
      });
      fn(count, bases);
    }
  });
}

// Drops entry `dim` from a shape or strides.
inline Shape without(const Shape& s, int64_t dim) {
  Shape r = s;
  r.erase(r.begin() + dim);
  return r;
}

}  // namespace ath::kernels
