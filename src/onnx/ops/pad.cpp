// Pad (constant, edge and reflect modes): one index_select per padded axis for edge and
// reflect (indices computed on the host), concatenation with filled blocks for constant mode.
// Opset 11 moved pads and the value from attributes to inputs.
#include "../op_table.h"
#include "athanor/ops/creation.h"
#include "athanor/ops/indexing.h"
#include "athanor/ops/shaping.h"
#include "athanor/ops/views.h"

namespace ath::onnx::detail {

Tensor pad_axis(const Tensor& x, int64_t d, int64_t before, int64_t after, const std::string& mode,
                const Scalar& value) {
  if (before == 0 && after == 0) return x;
  const int64_t n = x.size(d);
  Shape padded = x.shape();
  ATH_CHECK(std::abs(before) <= (int64_t{1} << 31) && std::abs(after) <= (int64_t{1} << 31),
            ValueError, "pads {} / {} are out of range", before, after);
  padded[static_cast<std::size_t>(d)] = std::max<int64_t>(0, n + before + after);
  check_output_size(padded);
  if (before < 0) return pad_axis(slice(x, d, -before, n), d, 0, after, mode, value);
  if (after < 0) return pad_axis(slice(x, d, 0, n + after), d, before, 0, mode, value);
  if (mode == "constant") {
    std::vector<Tensor> parts;
    Shape s = x.shape();
    if (before > 0) {
      s[static_cast<std::size_t>(d)] = before;
      parts.push_back(full(s, value, x.dtype()));
    }
    parts.push_back(x);
    if (after > 0) {
      s[static_cast<std::size_t>(d)] = after;
      parts.push_back(full(s, value, x.dtype()));
    }
    return cat(parts, d);
  }
  ATH_CHECK(n > 0, ShapeError, "{} padding of an empty axis", mode);
  std::vector<int64_t> idx;
  for (int64_t i = -before; i < n + after; ++i) {
    int64_t j = i;
    if (mode == "edge") {
      j = std::clamp<int64_t>(i, 0, n - 1);
    } else if (mode == "reflect") {
      ATH_CHECK(n > 1 && before < n && after < n, ShapeError,
                "reflect padding {} / {} needs an axis longer than the padding, got {}", before,
                after, n);
      if (j < 0) j = -j;
      if (j >= n) j = 2 * (n - 1) - j;
    } else {
      ATH_THROW(NotImplementedError, "Pad mode '{}'", mode);
    }
    idx.push_back(j);
  }
  return index_select(x, d, from_vector(idx));
}

namespace {

void lower_pad(NodeContext& c) {
  const Tensor& x = c.in(0);
  const std::string mode = c.attr_string("mode", "constant");
  std::vector<int64_t> pads;
  Scalar value = 0.0;
  std::vector<int64_t> axes;
  if (c.opset() >= 11) {
    pads = c.ints(1);
    if (c.has(2)) value = Scalar(c.doubles(2).at(0));
    if (c.has(3)) axes = c.ints(3);
  } else {
    pads = c.attr_ints("pads");
    value = Scalar(c.attr_float("value", 0.0));
  }
  if (axes.empty()) {
    for (int64_t d = 0; d < x.dim(); ++d) axes.push_back(d);
  }
  ATH_CHECK(pads.size() == 2 * axes.size(), ValueError, "{} pads for {} axes", pads.size(),
            axes.size());
  if (!x.is_floating_point()) value = Scalar(static_cast<int64_t>(value.to<double>()));
  Tensor y = x;
  const std::size_t k = axes.size();
  for (std::size_t i = 0; i < k; ++i)
    y = pad_axis(y, c.axis(axes[i], x.dim()), pads[i], pads[i + k], mode, value);
  c.out(0, y);
}

}  // namespace

void add_pad_ops(OpTable& t) { t["Pad"] = {lower_pad, 0b1110, 2, kAllTypes}; }

}  // namespace ath::onnx::detail
