// Shapes, strides and the broadcasting rules shared by every op.
//
//   Shape s{2, 3};                      // sizes, at most kMaxDims of them
//   assert(numel(s) == 6 && contiguous_strides(s) == Strides({3, 1}));
//   assert(broadcast_shapes(Shape{4, 1}, Shape{3}) == Shape({4, 3}));
#pragma once

#include <cstdint>
#include <string>

#include "athanor/core/small_vector.h"

namespace ath {

inline constexpr std::size_t kMaxDims = 12;
using Shape = SmallVec<int64_t, kMaxDims>;
using Strides = SmallVec<int64_t, kMaxDims>;
using DimList = SmallVec<int64_t, kMaxDims>;  // a set of dimensions, e.g. for reductions

int64_t numel(const Shape& s);
Strides contiguous_strides(const Shape& s);

// NumPy broadcasting; throws ShapeError naming both shapes when they do not broadcast.
Shape broadcast_shapes(const Shape& a, const Shape& b);

// Wraps a possibly negative dim into [0, ndim); throws IndexError naming the range.
// A 0-dim tensor accepts dims -1 and 0, as in PyTorch.
int64_t normalize_dim(int64_t dim, int64_t ndim);

// Normalized, sorted, duplicate-free dims; an empty list means "all dims".
DimList normalize_dims(const DimList& dims, int64_t ndim);

std::string to_string(const Shape& s);  // "[2, 3]"

}  // namespace ath

template <>
struct fmt::formatter<ath::Shape> : fmt::formatter<std::string_view> {
  auto format(const ath::Shape& s, fmt::format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(ath::to_string(s), ctx);
  }
};
