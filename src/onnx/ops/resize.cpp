// Resize (opsets 10, 11, 13) and Upsample: separable interpolation, one axis at a time. For each
// resized axis the source positions and weights of every output position depend only on shapes
// and attributes, so they are computed on the host exactly as ONNX's reference does
// (coordinate transformation, the n nearest source pixels with edge padding, nearest / linear /
// cubic coefficients, exclude_outside) and applied with index_select and multiply-adds: no
// kernel of its own.
#include <algorithm>
#include <cmath>

#include "../op_table.h"
#include "athanor/ops/comparison.h"
#include "athanor/ops/copy.h"
#include "athanor/ops/creation.h"
#include "athanor/ops/indexing.h"
#include "athanor/ops/pointwise.h"
#include "athanor/ops/views.h"

namespace ath::onnx::detail {

namespace {

struct ResizeAttrs {
  std::string mode = "nearest";
  std::string transform = "half_pixel";
  std::string nearest_mode = "round_prefer_floor";
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0.0;
};

std::vector<double> coefficients(const ResizeAttrs& a, double ratio) {
  if (a.mode == "nearest") {
    if (ratio == std::floor(ratio)) return {0, 1};
    if (a.nearest_mode == "round_prefer_floor")
      return {ratio <= 0.5 ? 1.0 : 0.0, ratio > 0.5 ? 1.0 : 0.0};
    if (a.nearest_mode == "round_prefer_ceil")
      return {ratio < 0.5 ? 1.0 : 0.0, ratio >= 0.5 ? 1.0 : 0.0};
    if (a.nearest_mode == "floor") return {1, 0};
    if (a.nearest_mode == "ceil") return {0, 1};
    ATH_THROW(ValueError, "nearest_mode '{}'", a.nearest_mode);
  }
  if (a.mode == "linear") return {1 - ratio, ratio};
  if (a.mode == "cubic") {
    const double A = a.cubic_a, r = ratio, s = 1 - ratio;
    return {((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A,
            ((A + 2) * r - (A + 3)) * r * r + 1, ((A + 2) * s - (A + 3)) * s * s + 1,
            ((A * (s + 1) - 5 * A) * (s + 1) + 8 * A) * (s + 1) - 4 * A};
  }
  ATH_THROW(NotImplementedError, "Resize mode '{}'", a.mode);
}

// One output position: the source indices (edge-clamped) and their weights, or `outside` for
// tf_crop_and_resize positions that take the extrapolation value.
struct Taps {
  std::vector<int64_t> index;
  std::vector<double> weight;
  bool outside = false;
};

Taps taps_for(const ResizeAttrs& a, int64_t x, int64_t in, double scale, double roi_start,
              double roi_end) {
  const double out_width = scale * static_cast<double>(in);
  const auto xf = static_cast<double>(x);
  double xo = 0;
  const std::string& t = a.transform;
  if (t == "align_corners") {
    xo = out_width == 1 ? 0.0 : xf * static_cast<double>(in - 1) / (out_width - 1);
  } else if (t == "asymmetric") {
    xo = xf / scale;
  } else if (t == "tf_crop_and_resize") {
    xo = out_width == 1
             ? (roi_end - roi_start) * static_cast<double>(in - 1) / 2
             : xf * (roi_end - roi_start) * static_cast<double>(in - 1) / (out_width - 1);
    xo += roi_start * static_cast<double>(in - 1);
  } else if (t == "pytorch_half_pixel") {
    xo = out_width == 1 ? -0.5 : (xf + 0.5) / scale - 0.5;
  } else if (t == "half_pixel") {
    xo = (xf + 0.5) / scale - 0.5;
  } else if (t == "tf_half_pixel_for_nn") {
    xo = (xf + 0.5) / scale;
  } else {
    ATH_THROW(ValueError, "coordinate_transformation_mode '{}'", t);
  }
  Taps taps;
  if (t == "tf_crop_and_resize" && (xo < 0 || xo > static_cast<double>(in - 1))) {
    taps.outside = true;
    return taps;
  }
  const double base = std::floor(xo);
  const double ratio = xo == base ? 1.0 : xo - base;
  std::vector<double> w = coefficients(a, ratio);
  const auto n = static_cast<int64_t>(w.size());
  // The n positions nearest xo (ties: the lower one) within the edge-padded range.
  const int64_t pad = (n + 1) / 2;
  std::vector<int64_t> cand;
  for (int64_t p = static_cast<int64_t>(base) - n; p <= static_cast<int64_t>(base) + n; ++p) {
    if (p >= -pad && p < in + pad) cand.push_back(p);
  }
  std::stable_sort(cand.begin(), cand.end(), [&](int64_t p, int64_t q) {
    const double dp = std::abs(xo - static_cast<double>(p)),
                 dq = std::abs(xo - static_cast<double>(q));
    return dp != dq ? dp < dq : p < q;
  });
  cand.resize(static_cast<std::size_t>(std::min<int64_t>(n, static_cast<int64_t>(cand.size()))));
  std::sort(cand.begin(), cand.end());
  if (a.exclude_outside) {
    double total = 0;
    for (std::size_t i = 0; i < cand.size(); ++i) {
      if (cand[i] < 0 || cand[i] >= in) w[i] = 0;
      total += w[i];
    }
    for (double& v : w) v = total != 0 ? v / total : 0;
  }
  for (std::size_t i = 0; i < cand.size(); ++i) {
    taps.index.push_back(std::clamp<int64_t>(cand[i], 0, in - 1));
    taps.weight.push_back(w[i]);
  }
  return taps;
}

Tensor resize_axis(const Tensor& x, int64_t d, int64_t out, double scale, const ResizeAttrs& a,
                   double roi_start, double roi_end) {
  const int64_t in = x.size(d);
  std::vector<Taps> all;
  std::size_t n = 0;
  bool any_outside = false;
  for (int64_t i = 0; i < out; ++i) {
    all.push_back(taps_for(a, i, in, scale, roi_start, roi_end));
    n = std::max(n, all.back().index.size());
    any_outside = any_outside || all.back().outside;
  }
  Shape wshape(static_cast<std::size_t>(x.dim()), 1);
  wshape[static_cast<std::size_t>(d)] = out;
  Tensor y;
  for (std::size_t k = 0; k < n; ++k) {
    std::vector<int64_t> idx;
    std::vector<double> w;
    bool trivial = true;  // every weight 1 (nearest): no multiply
    bool zero = true;
    for (const Taps& t : all) {
      const bool has = k < t.index.size();
      idx.push_back(has ? t.index[k] : 0);
      w.push_back(has ? t.weight[k] : 0.0);
      trivial = trivial && w.back() == 1.0;
      zero = zero && w.back() == 0.0;
    }
    if (zero) continue;
    Tensor g = index_select(x, d, from_vector(idx));
    if (!trivial) g = mul(g, to_dtype(reshape(from_vector(w), wshape), x.dtype()));
    y = y.defined() ? add(y, g) : g;
  }
  if (!y.defined()) {
    Shape s = x.shape();
    s[static_cast<std::size_t>(d)] = out;
    y = zeros(s, x.dtype());
  }
  if (any_outside) {
    std::vector<uint8_t> mask;
    for (const Taps& t : all) mask.push_back(t.outside ? 1 : 0);
    Tensor m = reshape(to_dtype(from_vector(mask), DType::Bool), wshape);
    y = where(m, full({}, a.extrapolation, x.dtype()), y);
  }
  return y;
}

void resize(NodeContext& c, const ResizeAttrs& a, std::vector<double> scales,
            std::vector<int64_t> sizes, const std::vector<double>& roi) {
  const Tensor& x = c.in(0);
  const auto rank = static_cast<std::size_t>(x.dim());
  ATH_CHECK(scales.empty() != sizes.empty(), ValueError,
            "exactly one of scales and sizes must be given");
  if (!sizes.empty()) {
    ATH_CHECK(sizes.size() == rank, ValueError, "{} sizes for rank {}", sizes.size(), rank);
    for (std::size_t d = 0; d < rank; ++d)
      scales.push_back(static_cast<double>(sizes[d]) /
                       static_cast<double>(x.size(static_cast<int64_t>(d))));
  } else {
    ATH_CHECK(scales.size() == rank, ValueError, "{} scales for rank {}", scales.size(), rank);
    for (std::size_t d = 0; d < rank; ++d) {
      ATH_CHECK(scales[d] > 0 && scales[d] < 1e6, ValueError, "scale {} is out of range",
                scales[d]);
      sizes.push_back(static_cast<int64_t>(
          std::floor(static_cast<double>(x.size(static_cast<int64_t>(d))) * scales[d])));
    }
  }
  check_output_size(Shape(sizes.begin(), sizes.end()));
  Tensor y = x;
  for (std::size_t d = 0; d < rank; ++d) {
    if (sizes[d] == x.size(static_cast<int64_t>(d)) && scales[d] == 1.0 &&
        a.transform != "tf_crop_and_resize")
      continue;
    const double rs = roi.size() == 2 * rank ? roi[d] : 0.0;
    const double re = roi.size() == 2 * rank ? roi[d + rank] : 1.0;
    y = resize_axis(y, static_cast<int64_t>(d), sizes[d], scales[d], a, rs, re);
  }
  c.out(0, y);
}

void lower_resize(NodeContext& c) {
  ResizeAttrs a;
  a.mode = c.attr_string("mode", "nearest");
  if (c.opset() < 11) {
    a.transform = "asymmetric";
    a.nearest_mode = "floor";  // Resize-10 / Upsample: nearest is the floor of x / scale
    resize(c, a, c.doubles(1), {}, {});
    return;
  }
  a.transform = c.attr_string("coordinate_transformation_mode", "half_pixel");
  a.nearest_mode = c.attr_string("nearest_mode", "round_prefer_floor");
  a.cubic_a = c.attr_float("cubic_coeff_a", -0.75);
  a.exclude_outside = c.attr_int("exclude_outside", 0) != 0;
  a.extrapolation = c.attr_float("extrapolation_value", 0.0);
  std::vector<double> roi, scales;
  std::vector<int64_t> sizes;
  if (c.has(1) && c.in(1).numel() > 0) roi = c.doubles(1);
  if (c.has(2) && c.in(2).numel() > 0) scales = c.doubles(2);
  if (c.has(3) && c.in(3).numel() > 0) sizes = c.ints(3);
  resize(c, a, scales, sizes, roi);
}

void lower_upsample(NodeContext& c) {
  ResizeAttrs a;
  a.mode = c.attr_string("mode", "nearest");
  a.transform = "asymmetric";
  a.nearest_mode = "floor";
  resize(c, a, c.opset() >= 9 ? c.doubles(1) : c.attr_floats("scales"), {}, {});
}

}  // namespace

void add_resize_ops(OpTable& t) {
  t["Resize"] = {lower_resize, 0b1110, 10, kNumericTypes};
  t["Upsample"] = {lower_upsample, 0b10, 7, kNumericTypes};
}

}  // namespace ath::onnx::detail
