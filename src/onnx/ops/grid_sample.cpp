// GridSample (opset 16) as PyTorch's grid_sample computes it (ONNX's test outputs come from it):
// grid coordinates unnormalized (align_corners or not), border/reflection padding applied to
// the coordinate, then nearest (round half to even), bilinear (4 taps) or bicubic (16 taps,
// A = -0.75, padding per tap). Each tap is a gather from the flattened image with indices
// computed from the grid by registry ops, so the whole op records and replays.
#include "../op_table.h"
#include "athanor/ops/comparison.h"
#include "athanor/ops/copy.h"
#include "athanor/ops/creation.h"
#include "athanor/ops/indexing.h"
#include "athanor/ops/pointwise.h"
#include "athanor/ops/views.h"

namespace ath::onnx::detail {

namespace {

struct Image {
  Tensor flat;  // [N, C, H * W]
  int64_t n = 0, c = 0, h = 0, w = 0;
};

Tensor unnormalize(const Tensor& g, int64_t size, bool align) {
  const auto s = static_cast<double>(size);
  return align ? mul(add(g, 1.0), (s - 1) / 2) : div(sub(mul(add(g, 1.0), s), 1.0), 2.0);
}

// torch's reflect_coordinates over [twice_low / 2, twice_high / 2].
Tensor reflect(const Tensor& x, double twice_low, double twice_high) {
  if (twice_low == twice_high) return zeros_like(x);
  const double low = twice_low / 2, span = (twice_high - twice_low) / 2;
  Tensor in = abs(sub(x, low));
  Tensor extra = fmod(in, Scalar(span));
  Tensor flips = floor(div(in, span));
  Tensor even = eq(fmod(flips, Scalar(2.0)), Scalar(0.0));
  return where(even, add(extra, low), add(sub(neg(extra), -span), low));
}

Tensor clip(const Tensor& x, int64_t size) {
  return clamp(x, std::optional<Scalar>(0.0), std::optional<Scalar>(static_cast<double>(size - 1)));
}

Tensor pad_coordinate(const Tensor& x, int64_t size, const std::string& mode, bool align) {
  if (mode == "border") return clip(x, size);
  if (mode == "reflection") {
    const auto s = static_cast<double>(size);
    return clip(align ? reflect(x, 0, 2 * (s - 1)) : reflect(x, -1, 2 * s - 1), size);
  }
  return x;
}

// The image at integer-valued coordinates (float tensors [N, Ho, Wo]); 0 outside.
Tensor tap(const Image& im, const Tensor& iy, const Tensor& ix) {
  Tensor valid =
      logical_and(logical_and(ge(ix, Scalar(0.0)), le(ix, Scalar(static_cast<double>(im.w - 1)))),
                  logical_and(ge(iy, Scalar(0.0)), le(iy, Scalar(static_cast<double>(im.h - 1)))));
  Tensor idx =
      to_dtype(add(mul(clip(iy, im.h), static_cast<double>(im.w)), clip(ix, im.w)), kInt64);
  const Shape out = idx.shape();
  Tensor g = gather(
      im.flat, 2, expand(reshape(idx, {im.n, 1, out[1] * out[2]}), {im.n, im.c, out[1] * out[2]}));
  g = reshape(g, {im.n, im.c, out[1], out[2]});
  return mul(g, unsqueeze(to_dtype(valid, g.dtype()), 1));
}

Tensor weighted(const Tensor& v, const Tensor& w) { return mul(v, unsqueeze(w, 1)); }

// Cubic convolution weights (A = -0.75) of the taps at floor - 1 .. floor + 2.
std::array<Tensor, 4> cubic_weights(const Tensor& t) {
  const double A = -0.75;
  Tensor t1 = add(t, 1.0), s = sub(neg(t), -1.0), s1 = add(s, 1.0);
  auto outer = [&](const Tensor& x) {  // ((A x - 5A) x + 8A) x - 4A
    return sub(mul(add(mul(sub(mul(x, A), 5 * A), x), 8 * A), x), 4 * A);
  };
  auto inner = [&](const Tensor& x) {  // ((A + 2) x - (A + 3)) x x + 1
    return add(mul(mul(sub(mul(x, A + 2), A + 3), x), x), 1.0);
  };
  return {outer(t1), inner(t), inner(s), outer(s1)};
}

void lower_grid_sample(NodeContext& c) {
  const Tensor& x = c.in(0);
  const Tensor& grid = c.in(1);
  ATH_CHECK(x.dim() == 4 && grid.dim() == 4 && grid.size(3) == 2 && grid.size(0) == x.size(0),
            ShapeError, "GridSample needs X [N, C, H, W] and grid [N, Ho, Wo, 2]");
  const std::string mode = c.attr_string("mode", "bilinear");
  const std::string padding = c.attr_string("padding_mode", "zeros");
  const bool align = c.attr_int("align_corners", 0) != 0;
  Image im{reshape(x, {x.size(0), x.size(1), x.size(2) * x.size(3)}), x.size(0), x.size(1),
           x.size(2), x.size(3)};
  Tensor gx = unnormalize(to_dtype(select(grid, 3, 0), x.dtype()), im.w, align);
  Tensor gy = unnormalize(to_dtype(select(grid, 3, 1), x.dtype()), im.h, align);
  if (mode == "bicubic") {
    Tensor x0 = floor(gx), y0 = floor(gy);
    const auto wx = cubic_weights(sub(gx, x0)), wy = cubic_weights(sub(gy, y0));
    Tensor y;
    for (int i = 0; i < 4; ++i) {
      Tensor row;
      Tensor iy = pad_coordinate(add(y0, static_cast<double>(i - 1)), im.h, padding, align);
      for (int j = 0; j < 4; ++j) {
        Tensor ix = pad_coordinate(add(x0, static_cast<double>(j - 1)), im.w, padding, align);
        Tensor v = weighted(tap(im, iy, ix), wx[static_cast<std::size_t>(j)]);
        row = row.defined() ? add(row, v) : v;
      }
      row = weighted(row, wy[static_cast<std::size_t>(i)]);
      y = y.defined() ? add(y, row) : row;
    }
    c.out(0, y);
    return;
  }
  gx = pad_coordinate(gx, im.w, padding, align);
  gy = pad_coordinate(gy, im.h, padding, align);
  if (mode == "nearest") {
    c.out(0, tap(im, round(gy), round(gx)));
    return;
  }
  if (mode != "bilinear") c.unsupported("GridSample mode '{}'", mode);
  Tensor x0 = floor(gx), y0 = floor(gy);
  Tensor x1 = add(x0, 1.0), y1 = add(y0, 1.0);
  Tensor wx1 = sub(gx, x0), wy1 = sub(gy, y0);
  Tensor wx0 = sub(neg(wx1), -1.0), wy0 = sub(neg(wy1), -1.0);
  Tensor y = weighted(tap(im, y0, x0), mul(wy0, wx0));
  y = add(y, weighted(tap(im, y0, x1), mul(wy0, wx1)));
  y = add(y, weighted(tap(im, y1, x0), mul(wy1, wx0)));
  y = add(y, weighted(tap(im, y1, x1), mul(wy1, wx1)));
  c.out(0, y);
}

}  // namespace

void add_grid_sample_ops(OpTable& t) { t["GridSample"] = {lower_grid_sample, 0, 16, kFloatTypes}; }

}  // namespace ath::onnx::detail
