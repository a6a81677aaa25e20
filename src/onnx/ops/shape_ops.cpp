// ONNX ops that move or make data without arithmetic: Reshape, Flatten, Transpose, Squeeze,
// Unsqueeze, Concat, Split, Slice, Expand, Tile, Shape, Size, Constant, ConstantOfShape, Range,
// EyeLike, Trilu. Axes moved from attributes to inputs at opset 13 (Squeeze, Unsqueeze, Split)
// and at opset 10 (Slice); both forms are read here.
#include <algorithm>
#include <limits>

#include "../op_table.h"
#include "../tensor_proto.h"
#include "athanor/ops/copy.h"
#include "athanor/ops/creation.h"
#include "athanor/ops/pointwise.h"
#include "athanor/ops/shaping.h"
#include "athanor/ops/views.h"

namespace ath::onnx::detail {

namespace {

Shape to_shape(const std::vector<int64_t>& v) { return Shape(v.begin(), v.end()); }

void lower_reshape(NodeContext& c) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> shape = c.opset() >= 5 ? c.ints(1) : c.attr_ints("shape");
  const bool allow_zero = c.opset() >= 14 && c.attr_int("allowzero", 0) != 0;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !allow_zero) {
      ATH_CHECK(static_cast<int64_t>(i) < x.dim(), ShapeError,
                "shape[{}] = 0 copies a dimension the input (rank {}) does not have", i, x.dim());
      shape[i] = x.size(static_cast<int64_t>(i));
    }
  }
  c.out(0, reshape(x, to_shape(shape)));
}

void lower_flatten(NodeContext& c) {
  const Tensor& x = c.in(0);
  const int64_t rank = x.dim();
  int64_t axis = c.attr_int("axis", 1);
  ATH_CHECK(axis >= -rank && axis <= rank, ValueError, "axis {} for rank {}", axis, rank);
  if (axis < 0) axis += rank;
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.size(d);
  int64_t inner = 1;
  for (int64_t d = axis; d < rank; ++d) inner *= x.size(d);
  c.out(0, reshape(x, {outer, inner}));
}

void lower_transpose(NodeContext& c) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> perm = c.attr_ints("perm");
  if (perm.empty()) {
    for (int64_t d = x.dim() - 1; d >= 0; --d) perm.push_back(d);
  }
  c.out(0, permute(x, DimList(perm.begin(), perm.end())));
}

std::vector<int64_t> axes_of(NodeContext& c, int input, int since) {
  if (c.opset() >= since) return c.has(input) ? c.ints(input) : std::vector<int64_t>{};
  return c.attr_ints("axes");
}

void lower_squeeze(NodeContext& c) {
  const Tensor& x = c.in(0);
  const std::vector<int64_t> axes = axes_of(c, 1, 13);
  std::vector<bool> drop(static_cast<std::size_t>(x.dim()), false);
  for (int64_t a : axes) {
    const int64_t d = c.axis(a, x.dim());
    ATH_CHECK(x.size(d) == 1, ShapeError, "cannot squeeze axis {} of size {}", a, x.size(d));
    drop[static_cast<std::size_t>(d)] = true;
  }
  Shape shape;
  for (int64_t d = 0; d < x.dim(); ++d) {
    const bool squeeze = axes.empty() ? x.size(d) == 1 : drop[static_cast<std::size_t>(d)];
    if (!squeeze) shape.push_back(x.size(d));
  }
  c.out(0, reshape(x, shape));
}

void lower_unsqueeze(NodeContext& c) {
  const Tensor& x = c.in(0);
  const std::vector<int64_t> axes = axes_of(c, 1, 13);
  const int64_t rank = x.dim() + static_cast<int64_t>(axes.size());
  std::vector<bool> added(static_cast<std::size_t>(rank), false);
  for (int64_t a : axes) {
    const int64_t d = c.axis(a, rank);
    ATH_CHECK(!added[static_cast<std::size_t>(d)], ValueError, "axis {} is repeated", a);
    added[static_cast<std::size_t>(d)] = true;
  }
  Shape shape;
  int64_t k = 0;
  for (int64_t d = 0; d < rank; ++d)
    shape.push_back(added[static_cast<std::size_t>(d)] ? 1 : x.size(k++));
  c.out(0, reshape(x, shape));
}

void lower_concat(NodeContext& c) {
  std::vector<Tensor> xs;
  for (int i = 0; i < c.num_inputs(); ++i) xs.push_back(c.in(i));
  const int64_t axis = c.axis(c.attr_int("axis", 0), xs.at(0).dim());
  c.out(0, cat(xs, axis));
}

void lower_split(NodeContext& c) {
  const Tensor& x = c.in(0);
  const int64_t axis = c.axis(c.attr_int("axis", 0), x.dim());
  std::vector<int64_t> sizes =
      c.opset() >= 13 ? (c.has(1) ? c.ints(1) : std::vector<int64_t>{}) : c.attr_ints("split");
  const int64_t n = c.num_outputs();
  if (sizes.empty()) {
    const int64_t dim = x.size(axis);
    ATH_CHECK(n > 0 && dim % n == 0, ShapeError, "cannot split {} into {} equal parts", dim, n);
    sizes.assign(static_cast<std::size_t>(n), dim / n);
  }
  ATH_CHECK(static_cast<int64_t>(sizes.size()) == n, ValueError, "{} split sizes for {} outputs",
            sizes.size(), n);
  std::vector<Tensor> parts = split(x, sizes, axis);
  for (int64_t i = 0; i < n; ++i) c.out(static_cast<int>(i), parts[static_cast<std::size_t>(i)]);
}

// Slice's clamping (ONNX): positive steps clamp start and end to [0, dim]; negative steps
// clamp start to [0, dim - 1] and end to [-1, dim - 1].
Tensor slice_axis(const Tensor& x, int64_t d, int64_t start, int64_t end, int64_t step) {
  const int64_t dim = x.size(d);
  auto norm = [&](int64_t v) { return v < 0 ? (v < -dim ? -1 - dim : v) + dim : v; };
  ATH_CHECK(step != 0, ValueError, "slice step 0");
  if (step > 0) {
    start = std::clamp<int64_t>(norm(start), 0, dim);
    end = std::clamp<int64_t>(norm(end), 0, dim);
    if (end < start) end = start;
    return slice(x, d, start, end, step);
  }
  start = std::clamp<int64_t>(norm(start), 0, dim - 1);
  end = std::clamp<int64_t>(end < -dim ? -1 : norm(end), -1, dim - 1);
  const int64_t count = start > end ? (start - end + (-step) - 1) / (-step) : 0;
  Tensor f = flip(x, {d});
  const int64_t s = dim - 1 - start;  // start's position in the flipped tensor
  return slice(f, d, s, count == 0 ? s : s + (count - 1) * (-step) + 1, -step);
}

void lower_slice(NodeContext& c) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.opset() >= 10) {
    starts = c.ints(1);
    ends = c.ints(2);
    if (c.has(3)) axes = c.ints(3);
    if (c.has(4)) steps = c.ints(4);
  } else {
    starts = c.attr_ints("starts");
    ends = c.attr_ints("ends");
    axes = c.attr_ints("axes");
  }
  ATH_CHECK(starts.size() == ends.size(), ValueError, "{} starts but {} ends", starts.size(),
            ends.size());
  if (axes.empty()) {
    for (std::size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  ATH_CHECK(axes.size() == starts.size() && steps.size() == starts.size(), ValueError,
            "starts, ends, axes and steps differ in length");
  Tensor y = x;
  for (std::size_t i = 0; i < starts.size(); ++i)
    y = slice_axis(y, c.axis(axes[i], x.dim()), starts[i], ends[i], steps[i]);
  c.out(0, y);
}

Shape broadcast_shape(const Shape& a, const std::vector<int64_t>& b) {
  const std::size_t n = std::max(a.size(), b.size());
  Shape out(n, 1);
  for (std::size_t i = 0; i < n; ++i) {
    const int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    ATH_CHECK(x == y || x == 1 || y == 1, ShapeError, "cannot broadcast dimension {} with {}", x,
              y);
    out[i] = x == 1 ? y : x;
  }
  return out;
}

void lower_expand(NodeContext& c) {
  const Tensor& x = c.in(0);
  const Shape shape = broadcast_shape(x.shape(), c.ints(1));
  check_output_size(shape);
  c.out(0, expand(x, shape));
}

void lower_tile(NodeContext& c) {
  const Tensor& x = c.in(0);
  const std::vector<int64_t> reps = c.ints(1);
  ATH_CHECK(static_cast<int64_t>(reps.size()) == x.dim(), ValueError, "{} repeats for rank {}",
            reps.size(), x.dim());
  c.out(0, repeat(x, to_shape(reps)));
}

void lower_shape(NodeContext& c) {
  const Tensor& x = c.in(0);
  const int64_t rank = x.dim();
  int64_t start = c.opset() >= 15 ? c.attr_int("start", 0) : 0;
  int64_t end = c.opset() >= 15 ? c.attr_int("end", rank) : rank;
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  std::vector<int64_t> dims(x.shape().begin() + start, x.shape().begin() + end);
  c.out(0, from_vector(dims));
}

void lower_size(NodeContext& c) { c.out(0, full({}, c.in(0).numel(), kInt64)); }

void lower_constant(NodeContext& c) {
  if (c.has_attr("value")) {
    c.out(0, c.attr_tensor("value"));
  } else if (c.has_attr("value_float")) {
    c.out(0, full({}, c.attr_float("value_float", 0), kFloat32));
  } else if (c.has_attr("value_int")) {
    c.out(0, full({}, c.attr_int("value_int", 0), kInt64));
  } else if (c.has_attr("value_floats")) {
    std::vector<float> v;
    for (double d : c.attr_floats("value_floats")) v.push_back(static_cast<float>(d));
    c.out(0, from_vector(v));
  } else if (c.has_attr("value_ints")) {
    c.out(0, from_vector(c.attr_ints("value_ints")));
  } else {
    c.unsupported(
        "Constant needs a value, value_float(s) or value_int(s) attribute (sparse and "
        "string values are not supported)");
  }
}

void lower_constant_of_shape(NodeContext& c) {
  const std::vector<int64_t> shape = c.ints(0);
  check_output_size(to_shape(shape));
  Tensor value = c.attr_tensor("value");
  if (!value.defined()) {
    c.out(0, zeros(to_shape(shape), kFloat32));
    return;
  }
  ATH_CHECK(value.numel() == 1, ValueError, "value must hold one element, has {}", value.numel());
  c.out(0, full(to_shape(shape), value.item(), value.dtype()));
}

void lower_range(NodeContext& c) {
  const DType dt = c.in(0).dtype();
  if (is_floating(dt)) {
    const double start = c.doubles(0).at(0), limit = c.doubles(1).at(0), delta = c.doubles(2).at(0);
    ATH_CHECK(delta != 0, ValueError, "Range with delta 0");
    const double count = std::max(0.0, std::ceil((limit - start) / delta));
    ATH_CHECK(count <= static_cast<double>(int64_t{1} << 31), ValueError, "Range of {} values",
              count);
    const auto n = static_cast<int64_t>(count);
    // start + i * delta in the input type, as ONNX's reference computes it
    c.out(0, to_dtype(add(mul(arange(Scalar(n)), delta), start), dt));
  } else {
    const int64_t start = c.ints(0).at(0), limit = c.ints(1).at(0), delta = c.ints(2).at(0);
    ATH_CHECK(delta != 0, ValueError, "Range with delta 0");
    const double count = std::ceil((static_cast<double>(limit) - static_cast<double>(start)) /
                                   static_cast<double>(delta));
    ATH_CHECK(count <= static_cast<double>(int64_t{1} << 31), ValueError, "Range of {} values",
              count);
    c.out(0, arange(Scalar(start), Scalar(limit), Scalar(delta), dt));
  }
}

void lower_eye_like(NodeContext& c) {
  const Tensor& x = c.in(0);
  ATH_CHECK(x.dim() == 2, ShapeError, "EyeLike needs a 2-D input, got rank {}", x.dim());
  const int dtype_attr = static_cast<int>(c.attr_int("dtype", 0));
  std::optional<DType> dt = dtype_attr == 0 ? x.dtype() : dtype_from_onnx(dtype_attr);
  if (!dt) c.unsupported("EyeLike dtype {}", onnx_type_name(dtype_attr));
  const int64_t k = c.attr_int("k", 0);
  const int64_t n = x.size(0), m = x.size(1);
  std::vector<double> v(static_cast<std::size_t>(n * m), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t j = i + k;
    if (j >= 0 && j < m) v[static_cast<std::size_t>(i * m + j)] = 1.0;
  }
  c.out(0, to_dtype(from_vector(v, {n, m}), *dt));
}

void lower_trilu(NodeContext& c) {
  const int64_t k = c.has(1) ? c.ints(1).at(0) : 0;
  c.out(0, c.attr_int("upper", 1) != 0 ? triu(c.in(0), k) : tril(c.in(0), k));
}

// DepthToSpace / SpaceToDepth: a reshape, a permutation, a reshape (DCR and CRD orders).
void lower_depth_to_space(NodeContext& c) {
  const Tensor& x = c.in(0);
  ATH_CHECK(x.dim() == 4, ShapeError, "expected [N, C, H, W], got rank {}", x.dim());
  const int64_t b = c.attr_int("blocksize", 0);
  const int64_t n = x.size(0), ch = x.size(1), h = x.size(2), w = x.size(3);
  ATH_CHECK(b > 0 && ch % (b * b) == 0, ShapeError, "blocksize {} for {} channels", b, ch);
  const int64_t oc = ch / (b * b);
  Tensor y;
  if (c.attr_string("mode", "DCR") == "DCR") {
    y = permute(reshape(x, {n, b, b, oc, h, w}), {0, 3, 4, 1, 5, 2});
  } else {
    y = permute(reshape(x, {n, oc, b, b, h, w}), {0, 1, 4, 2, 5, 3});
  }
  c.out(0, reshape(y, {n, oc, h * b, w * b}));
}

void lower_space_to_depth(NodeContext& c) {
  const Tensor& x = c.in(0);
  ATH_CHECK(x.dim() == 4, ShapeError, "expected [N, C, H, W], got rank {}", x.dim());
  const int64_t b = c.attr_int("blocksize", 0);
  const int64_t n = x.size(0), ch = x.size(1), h = x.size(2), w = x.size(3);
  ATH_CHECK(b > 0 && h % b == 0 && w % b == 0, ShapeError, "blocksize {} for {}x{}", b, h, w);
  Tensor y = permute(reshape(x, {n, ch, h / b, b, w / b, b}), {0, 3, 5, 1, 2, 4});
  c.out(0, reshape(y, {n, ch * b * b, h / b, w / b}));
}

}  // namespace

void add_shape_ops(OpTable& t) {
  t["Reshape"] = {lower_reshape, 1u << 1, 5, kAllTypes};
  t["Flatten"] = {lower_flatten, 0, 1, kAllTypes};
  t["Transpose"] = {lower_transpose, 0, 1, kAllTypes};
  t["Squeeze"] = {lower_squeeze, 1u << 1, 1, kAllTypes};
  t["Unsqueeze"] = {lower_unsqueeze, 1u << 1, 1, kAllTypes};
  t["Concat"] = {lower_concat, 0, 4, kAllTypes};
  t["Split"] = {lower_split, 1u << 1, 2, kAllTypes};
  t["Slice"] = {lower_slice, 0b11110, 1, kAllTypes};
  t["Expand"] = {lower_expand, 1u << 1, 8, kAllTypes};
  t["Tile"] = {lower_tile, 1u << 1, 6, kAllTypes};
  t["Shape"] = {lower_shape, 0, 1, kAllTypes, true};
  t["Size"] = {lower_size, 0, 1, kAllTypes, true};
  t["Constant"] = {lower_constant, 0, 1, kAllTypes};
  t["ConstantOfShape"] = {lower_constant_of_shape, 1u << 0, 9, kIntTypes};
  t["Range"] = {lower_range, 0b111, 11, kNumericTypes};
  t["EyeLike"] = {lower_eye_like, 0, 9, kAllTypes, true};
  t["DepthToSpace"] = {lower_depth_to_space, 0, 1, kAllTypes};
  t["SpaceToDepth"] = {lower_space_to_depth, 0, 1, kAllTypes};
  t["Trilu"] = {lower_trilu, 1u << 1, 14, kAllTypes};
}

}  // namespace ath::onnx::detail
