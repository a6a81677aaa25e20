// View ops: outputs alias their input's storage (no copy); gradients flow back through them.
//
//   Tensor x = randn({4, 10}), b = randn({3});
//   Tensor y = x.view({2, -1});          // throws ShapeError when strides don't allow a view
//   Tensor r = x.reshape({2, -1});       // a view when possible, else a copy
//   Tensor c = x.slice(1, 0, 10, 2);     // columns 0, 2, 4, 6, 8
//   Tensor e = b.expand({4, 3});         // stride 0 on the broadcast dim
//   c.zero_();                           // writes x's even columns
//   assert(y.shares_storage(x) && e.stride(0) == 0 && x.to_vector<float>()[2] == 0);
//
// Writing through a view writes the base: views share one storage and its version counter.
#pragma once

#include <optional>

#include "athanor/ops/op.h"

namespace ath {

Tensor view(const Tensor& x, const Shape& shape);
Tensor reshape(const Tensor& x, const Shape& shape);
Tensor permute(const Tensor& x, const DimList& dims);
Tensor transpose(const Tensor& x, int64_t d0, int64_t d1);
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length);
Tensor slice(const Tensor& x, int64_t dim, std::optional<int64_t> start = {},
             std::optional<int64_t> end = {}, int64_t step = 1);
Tensor select(const Tensor& x, int64_t dim, int64_t index);
Tensor expand(const Tensor& x, const Shape& shape);
Tensor squeeze(const Tensor& x);
Tensor squeeze(const Tensor& x, int64_t dim);
Tensor unsqueeze(const Tensor& x, int64_t dim);
Tensor flatten(const Tensor& x, int64_t start_dim = 0, int64_t end_dim = -1);
Tensor unflatten(const Tensor& x, int64_t dim, const Shape& sizes);
Tensor as_strided(const Tensor& x, const Shape& size, const Strides& stride,
                  std::optional<int64_t> storage_offset = {});

// Resolves one -1 in `shape` against numel; throws ShapeError when it can't.
Shape infer_view_shape(const Shape& shape, int64_t numel);
// Strides that view (sizes, strides) as new_shape, or nullopt when a copy is needed.
std::optional<Strides> view_strides(const Shape& sizes, const Strides& strides,
                                    const Shape& new_shape);

struct ShapeAttrs {
  Shape shape;
  bool operator==(const ShapeAttrs&) const = default;
};
struct PermuteAttrs {
  DimList dims;
  bool operator==(const PermuteAttrs&) const = default;
};
struct SliceAttrs {
  int64_t dim = 0, start = 0, end = 0, step = 1;  // normalized and clamped
  bool operator==(const SliceAttrs&) const = default;
};
struct SelectAttrs {
  int64_t dim = 0, index = 0;  // normalized
  bool operator==(const SelectAttrs&) const = default;
};
struct AsStridedAttrs {
  Shape size;
  Strides stride;
  int64_t offset = 0;  // relative to the input's own storage offset
  bool operator==(const AsStridedAttrs&) const = default;
};
// view_scatter(grad) = zeros(base_shape) with as_strided(size, stride, offset) set to grad:
// the backward of every slicing view.
struct ViewScatterAttrs {
  Shape base_shape;
  Shape size;
  Strides stride;
  int64_t offset = 0;
  bool operator==(const ViewScatterAttrs&) const = default;
};

const Op<ShapeAttrs>& op_view();
const Op<PermuteAttrs>& op_permute();
const Op<SliceAttrs>& op_slice();
const Op<SelectAttrs>& op_select();
const Op<ShapeAttrs>& op_expand();
const Op<AsStridedAttrs>& op_as_strided();
const Op<ViewScatterAttrs>& op_view_scatter();

}  // namespace ath
