// ONNX neural-network ops: MatMul, Gemm, Conv, ConvTranspose, BatchNormalization, pooling,
// LayerNormalization, InstanceNormalization. 1-D convolutions and pools run as 2-D ones over a
// height of 1 (athanor's kernels are 2-D); 3-D ones are not supported.
#include <cmath>
#include <limits>

#include "../op_table.h"
#include "athanor/ops/conv.h"
#include "athanor/ops/copy.h"
#include "athanor/ops/creation.h"
#include "athanor/ops/indexing.h"
#include "athanor/ops/linalg.h"
#include "athanor/ops/nn_functional.h"
#include "athanor/ops/pointwise.h"
#include "athanor/ops/reduction.h"
#include "athanor/ops/shaping.h"
#include "athanor/ops/views.h"

namespace ath::onnx::detail {

namespace {

void lower_matmul(NodeContext& c) { c.out(0, matmul(c.in(0), c.in(1))); }

void lower_gemm(NodeContext& c) {
  Tensor a = c.in(0), b = c.in(1);
  const double alpha = c.attr_float("alpha", 1.0), beta = c.attr_float("beta", 1.0);
  const bool ta = c.attr_int("transA", 0) != 0, tb = c.attr_int("transB", 0) != 0;
  if (ta) a = transpose(a, 0, 1);
  const Tensor w = tb ? b : transpose(b, 0, 1);  // linear's weight is [out, in]
  const bool has_c = c.has(2) && beta != 0;
  const int64_t n = w.size(0);
  if (alpha == 1.0 && (!has_c || (beta == 1.0 && c.in(2).dim() == 1 && c.in(2).size(0) == n))) {
    // The common exported form: linear(), which the epilogue pass can fuse with a ReLU.
    c.out(0, has_c ? linear(a, w, c.in(2)) : linear(a, w));
    return;
  }
  Tensor y = linear(a, w);
  if (alpha != 1.0) y = mul(y, alpha);
  if (has_c) y = add(y, beta == 1.0 ? c.in(2) : mul(c.in(2), beta));
  c.out(0, y);
}

// Spatial geometry shared by Conv, ConvTranspose and the pools, for 1 or 2 spatial dims.
struct Geometry {
  int spatial = 2;
  std::array<int64_t, 2> kernel{1, 1}, stride{1, 1}, dilation{1, 1}, pad_l{0, 0}, pad_r{0, 0};
};

Geometry read_geometry(NodeContext& c, const Tensor& x, std::vector<int64_t> kernel,
                       bool transposed = false) {
  Geometry g;
  g.spatial = static_cast<int>(x.dim()) - 2;
  if (g.spatial < 1 || g.spatial > 2)
    c.unsupported("{}-D spatial input (rank {}); 1-D and 2-D are supported", g.spatial, x.dim());
  const auto n = static_cast<std::size_t>(g.spatial);
  auto list = [&](const char* name, int64_t fallback, std::size_t len) {
    std::vector<int64_t> v = c.attr_ints(name);
    if (v.empty()) v.assign(len, fallback);
    ATH_CHECK(v.size() == len, ValueError, "attribute {} has {} values, expected {}", name,
              v.size(), len);
    return v;
  };
  if (kernel.empty()) kernel = list("kernel_shape", 1, n);
  ATH_CHECK(kernel.size() == n, ValueError, "kernel_shape has {} values for {} spatial dims",
            kernel.size(), n);
  const auto strides = list("strides", 1, n);
  const auto dilations = list("dilations", 1, n);
  auto pads = list("pads", 0, 2 * n);
  const std::string auto_pad = c.attr_string("auto_pad", "NOTSET");
  const std::size_t off = 2 - n;  // 1-D runs as 2-D with a height of 1
  for (std::size_t i = 0; i < n; ++i) {
    g.kernel[off + i] = kernel[i];
    g.stride[off + i] = strides[i];
    g.dilation[off + i] = dilations[i];
    const int64_t in = x.size(static_cast<int64_t>(2 + i));
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      int64_t total = 0;
      if (!transposed) {
        const int64_t out = (in + strides[i] - 1) / strides[i];
        total =
            std::max<int64_t>(0, (out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - in);
      } else {
        total = std::max<int64_t>(
            0, (in - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - in * strides[i]);
      }
      const int64_t small = total / 2, big = total - small;
      const bool upper = auto_pad == "SAME_UPPER";
      pads[i] = upper ? small : big;
      pads[i + n] = upper ? big : small;
    } else if (auto_pad == "VALID") {
      pads[i] = pads[i + n] = 0;
    } else if (auto_pad != "NOTSET") {
      ATH_THROW(ValueError, "auto_pad '{}'", auto_pad);
    }
    g.pad_l[off + i] = pads[i];
    g.pad_r[off + i] = pads[i + n];
  }
  return g;
}

Tensor to_2d(const Tensor& x, const Geometry& g) { return g.spatial == 1 ? unsqueeze(x, 2) : x; }
Tensor from_2d(const Tensor& y, const Geometry& g) { return g.spatial == 1 ? squeeze(y, 2) : y; }

void check_weight_rank(const Tensor& x, const Tensor& w) {
  ATH_CHECK(x.dim() >= 3 && w.dim() == x.dim(), ShapeError,
            "input of rank {} and weight of rank {}: expected [N, C, spatial...] and a weight of "
            "the same rank",
            x.dim(), w.dim());
}

}  // namespace

Tensor conv_node(NodeContext& c, const Tensor& x, const Tensor& w, std::optional<Tensor> bias) {
  check_weight_rank(x, w);
  std::vector<int64_t> kernel(w.shape().begin() + 2, w.shape().end());
  const Geometry g = read_geometry(c, x, kernel);
  ConvAttrs a{.stride = g.stride,
              .pad_l = g.pad_l,
              .pad_r = g.pad_r,
              .dilation = g.dilation,
              .groups = c.attr_int("group", 1),
              .transposed = false};
  return from_2d(convolution(to_2d(x, g), to_2d(w, g), bias, a), g);
}

namespace {

void lower_conv(NodeContext& c) {
  std::optional<Tensor> bias;
  if (c.has(2)) bias = c.in(2);
  c.out(0, conv_node(c, c.in(0), c.in(1), bias));
}

void lower_conv_transpose(NodeContext& c) {
  const Tensor& x = c.in(0);
  const Tensor& w = c.in(1);
  check_weight_rank(x, w);
  std::vector<int64_t> kernel(w.shape().begin() + 2, w.shape().end());
  Geometry g = read_geometry(c, x, kernel, true);
  const auto n = static_cast<std::size_t>(g.spatial);
  std::vector<int64_t> out_pad = c.attr_ints("output_padding");
  if (out_pad.empty()) out_pad.assign(n, 0);
  const std::vector<int64_t> out_shape = c.attr_ints("output_shape");
  const std::size_t off = 2 - n;
  for (std::size_t i = 0; i < n; ++i) {
    if (!out_shape.empty()) {
      const int64_t in = x.size(static_cast<int64_t>(2 + i));
      const int64_t full = (in - 1) * g.stride[off + i] + out_pad[i] +
                           (g.kernel[off + i] - 1) * g.dilation[off + i] + 1;
      const int64_t total = full - out_shape.at(out_shape.size() - n + i);
      // floor division, as ONNX's reference: a negative total (an output longer than the
      // input covers) becomes a negative end pad, which pad_r takes like output_padding
      const int64_t small = total >= 0 ? total / 2 : -((-total + 1) / 2), big = total - small;
      const bool upper = c.attr_string("auto_pad", "NOTSET") == "SAME_UPPER";
      g.pad_l[off + i] = upper ? small : big;
      g.pad_r[off + i] = upper ? big : small;
    }
    g.pad_r[off + i] -= out_pad[i];  // the transposed op's pad_r absorbs output_padding
  }
  ConvAttrs a{.stride = g.stride,
              .pad_l = g.pad_l,
              .pad_r = g.pad_r,
              .dilation = g.dilation,
              .groups = c.attr_int("group", 1),
              .transposed = true};
  std::optional<Tensor> bias;
  if (c.has(2)) bias = c.in(2);
  c.out(0, from_2d(convolution(to_2d(x, g), to_2d(w, g), bias, a), g));
}

// Training mode (opset 14+): normalizes with the batch's statistics (population variance) and
// returns the updated running statistics as outputs 1 and 2.
void batch_norm_training(NodeContext& c) {
  const Tensor& x = c.in(0);
  const double eps = c.attr_float("epsilon", 1e-5), momentum = c.attr_float("momentum", 0.9);
  DimList dims{0};
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  Shape s(static_cast<std::size_t>(x.dim()), 1);
  s[1] = x.size(1);
  Tensor m = mean(x, dims), v = var(x, dims, 0);
  Tensor y = div(sub(x, reshape(m, s)), sqrt(add(reshape(v, s), eps)));
  c.out(0, add(mul(y, reshape(c.in(1), s)), reshape(c.in(2), s)));
  if (c.wants(1)) c.out(1, add(mul(c.in(3), momentum), mul(m, 1 - momentum)));
  if (c.wants(2)) c.out(2, add(mul(c.in(4), momentum), mul(v, 1 - momentum)));
}

void lower_batch_norm(NodeContext& c) {
  if (c.opset() >= 14 && c.attr_int("training_mode", 0) != 0) {
    batch_norm_training(c);
    return;
  }
  if (c.opset() < 9 && c.attr_int("spatial", 1) == 0) c.unsupported("BatchNormalization spatial=0");
  if (c.attr_int("training_mode", 0) != 0 || c.wants(1) || c.wants(2))
    c.unsupported("BatchNormalization in training mode (inference uses the running statistics)");
  const double eps = c.attr_float("epsilon", 1e-5);
  c.out(0, batch_norm(c.in(0), c.in(3), c.in(4), c.in(1), c.in(2), false, 0.1, eps));
}

// Explicit padding where athanor's pools cannot take it (asymmetric, or over half the kernel).
bool pool_padding_fits(const Geometry& g) {
  for (int i = 0; i < 2; ++i) {
    if (g.pad_l[static_cast<std::size_t>(i)] != g.pad_r[static_cast<std::size_t>(i)] ||
        g.pad_l[static_cast<std::size_t>(i)] > g.kernel[static_cast<std::size_t>(i)] / 2)
      return false;
  }
  return true;
}

void lower_max_pool(NodeContext& c) {
  const Tensor& x = c.in(0);
  if (c.attr_int("storage_order", 0) != 0) c.unsupported("MaxPool storage_order=1");
  Geometry g = read_geometry(c, x, {});
  const bool ceil_mode = c.attr_int("ceil_mode", 0) != 0;
  Tensor x2 = to_2d(x, g);
  if (!pool_padding_fits(g)) {
    if (ceil_mode) c.unsupported("MaxPool with ceil_mode and asymmetric or large pads");
    const double lowest = -std::numeric_limits<double>::infinity();
    for (int i = 0; i < 2; ++i) {
      x2 = pad_axis(x2, 2 + i, g.pad_l[static_cast<std::size_t>(i)],
                    g.pad_r[static_cast<std::size_t>(i)], "constant", Scalar(lowest));
    }
    g.pad_l = g.pad_r = {0, 0};
    if (c.wants(1)) c.unsupported("MaxPool Indices with asymmetric pads");
  }
  MaxPool2dOptions o{.kernel = Int2(g.kernel[0], g.kernel[1]),
                     .stride = MaybeInt2(g.stride[0], g.stride[1]),
                     .padding = Int2(g.pad_l[0], g.pad_l[1]),
                     .dilation = Int2(g.dilation[0], g.dilation[1]),
                     .ceil_mode = ceil_mode};
  if (!c.wants(1)) {
    c.out(0, from_2d(max_pool2d(x2, o), g));
    return;
  }
  // ONNX indices count over the whole NCHW tensor; athanor's over each plane.
  auto [y, idx] = max_pool2d_with_indices(x2, o);
  const int64_t plane = x2.size(2) * x2.size(3);
  Tensor base =
      mul(reshape(arange(Scalar(x2.size(0) * x2.size(1))), {x2.size(0), x2.size(1), 1, 1}),
          Scalar(plane));
  c.out(0, from_2d(y, g));
  c.out(1, from_2d(add(idx, base), g));
}

void lower_avg_pool(NodeContext& c) {
  const Tensor& x = c.in(0);
  Geometry g = read_geometry(c, x, {});
  if (g.dilation != std::array<int64_t, 2>{1, 1}) c.unsupported("AveragePool with dilations");
  const bool ceil_mode = c.attr_int("ceil_mode", 0) != 0;
  const bool include_pad = c.attr_int("count_include_pad", 0) != 0;
  Tensor x2 = to_2d(x, g);
  Tensor mask;  // where the padded input holds data (count_include_pad=0 divides by its sum)
  if (!pool_padding_fits(g)) {
    // Explicit zero padding; the divisor is the window's count of real elements, pooled from a
    // mask padded the same way (or the whole window with count_include_pad=1).
    if (ceil_mode) c.unsupported("AveragePool with ceil_mode and asymmetric or large pads");
    if (!include_pad) mask = ones_like(x2);
    for (int i = 0; i < 2; ++i) {
      const auto k = static_cast<std::size_t>(i);
      x2 = pad_axis(x2, 2 + i, g.pad_l[k], g.pad_r[k], "constant", Scalar(0.0));
      if (mask.defined())
        mask = pad_axis(mask, 2 + i, g.pad_l[k], g.pad_r[k], "constant", Scalar(0.0));
    }
    g.pad_l = g.pad_r = {0, 0};
  }
  AvgPool2dOptions o{.kernel = Int2(g.kernel[0], g.kernel[1]),
                     .stride = MaybeInt2(g.stride[0], g.stride[1]),
                     .padding = Int2(g.pad_l[0], g.pad_l[1]),
                     .ceil_mode = ceil_mode,
                     .count_include_pad = include_pad,
                     .divisor_override = std::nullopt};
  Tensor y = avg_pool2d(x2, o);
  if (mask.defined()) y = div(y, avg_pool2d(mask, o));
  c.out(0, from_2d(y, g));
}

// MaxPool's inverse: zeros, with x's values at the (whole-tensor) indices MaxPool returned. The
// indices count in the default output shape; a larger output_shape pads at the end, as ONNX's
// reference does.
void lower_max_unpool(NodeContext& c) {
  const Tensor& x = c.in(0);
  const Geometry g = read_geometry(c, x, {});
  Shape out = {x.size(0), x.size(1)};
  const std::size_t off = g.spatial == 1 ? 1 : 0;
  for (int64_t i = 0; i < g.spatial; ++i) {
    const std::size_t k = off + static_cast<std::size_t>(i);
    out.push_back((x.size(2 + i) - 1) * g.stride[k] + g.kernel[k] - g.pad_l[k] - g.pad_r[k]);
  }
  check_output_size(out);
  int64_t n = 1;
  for (int64_t d : out) n *= d;
  Tensor y = reshape(
      scatter(zeros({n}, x.dtype()), 0, reshape(to_dtype(c.in(1), kInt64), {-1}), reshape(x, {-1})),
      out);
  if (c.has(2)) {
    const std::vector<int64_t> want = c.ints(2);
    ATH_CHECK(want.size() == out.size(), ValueError, "output_shape has {} dims, expected {}",
              want.size(), out.size());
    for (std::size_t d = 0; d < out.size(); ++d) {
      ATH_CHECK(want[d] >= out[d], ShapeError, "output_shape {} is smaller than {} in dim {}",
                want[d], out[d], d);
      y = pad_axis(y, static_cast<int64_t>(d), 0, want[d] - out[d], "constant", Scalar(0.0));
    }
  }
  c.out(0, y);
}

// y = x / (bias + alpha / size * sum of x^2 over `size` neighbouring channels)^beta
void lower_lrn(NodeContext& c) {
  const Tensor& x = c.in(0);
  const int64_t size = c.attr_int("size", 0);
  ATH_CHECK(size >= 1 && size <= 1024, ValueError, "LRN size {}", size);
  ATH_CHECK(x.dim() >= 3, ShapeError, "LRN needs [N, C, ...], got rank {}", x.dim());
  const double alpha = c.attr_float("alpha", 1e-4), beta = c.attr_float("beta", 0.75);
  const double bias = c.attr_float("bias", 1.0);
  const int64_t ch = x.size(1);
  Tensor sq = pad_axis(mul(x, x), 1, (size - 1) / 2, size / 2, "constant", Scalar(0.0));
  Tensor sum = slice(sq, 1, 0, ch);
  for (int64_t k = 1; k < size; ++k) sum = add(sum, slice(sq, 1, k, k + ch));
  c.out(0, div(x, pow(add(mul(sum, alpha / static_cast<double>(size)), bias), beta)));
}

template <bool Max>
void lower_global_pool(NodeContext& c) {
  const Tensor& x = c.in(0);
  DimList dims;
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  c.out(0, Max ? amax(x, dims, true) : mean(x, dims, true));
}

void lower_layer_norm(NodeContext& c) {
  const Tensor& x = c.in(0);
  const int64_t axis = c.axis(c.attr_int("axis", -1), x.dim());
  const double eps = c.attr_float("epsilon", 1e-5);
  Shape normalized(x.shape().begin() + axis, x.shape().end());
  c.out(0, layer_norm(x, normalized, c.in(1), c.has(2) ? c.in(2) : Tensor(), eps));
  if (c.wants(1) || c.wants(2)) {
    DimList dims;
    for (int64_t d = axis; d < x.dim(); ++d) dims.push_back(d);
    Tensor xf = to_dtype(x, kFloat32);
    if (c.wants(1)) c.out(1, mean(xf, dims, true));
    if (c.wants(2)) c.out(2, rsqrt(add(var(xf, dims, 0, true), eps)));
  }
}

// ONNX's function body: (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9) over `axes` (default N, H, W).
void lower_mvn(NodeContext& c) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> axes = c.attr_ints("axes");
  if (axes.empty()) axes = {0, 2, 3};
  DimList dims;
  for (int64_t a : axes) dims.push_back(c.axis(a, x.dim()));
  Tensor m = mean(x, dims, true);
  Tensor var = sub(mean(mul(x, x), dims, true), mul(m, m));
  c.out(0, div(sub(x, m), add(sqrt(var), 1e-9)));
}

// x / ||x||_p along one axis (p = 1 or 2).
void lower_lp_normalization(NodeContext& c) {
  const Tensor& x = c.in(0);
  const int64_t p = c.attr_int("p", 2);
  if (p != 1 && p != 2) c.unsupported("LpNormalization p={}", p);
  const int64_t axis = c.axis(c.attr_int("axis", -1), x.dim());
  c.out(0, div(x, norm(x, static_cast<double>(p), {axis}, true)));
}

// (sum over the window of |x|^p)^(1/p): the average pool of |x|^p times the window size.
void lower_lp_pool(NodeContext& c) {
  const Tensor& x = c.in(0);
  const auto p = static_cast<double>(c.attr_int("p", 2));
  const Geometry g = read_geometry(c, x, {});
  if (!pool_padding_fits(g) || g.dilation != std::array<int64_t, 2>{1, 1})
    c.unsupported("LpPool with asymmetric or large pads, or dilations");
  AvgPool2dOptions o{.kernel = Int2(g.kernel[0], g.kernel[1]),
                     .stride = MaybeInt2(g.stride[0], g.stride[1]),
                     .padding = Int2(g.pad_l[0], g.pad_l[1]),
                     .ceil_mode = false,
                     .count_include_pad = true,
                     .divisor_override = 1};
  c.out(0, from_2d(pow(avg_pool2d(pow(abs(to_2d(x, g)), p), o), 1.0 / p), g));
}

void lower_global_lp_pool(NodeContext& c) {
  const Tensor& x = c.in(0);
  const auto p = static_cast<double>(c.attr_int("p", 2));
  DimList dims;
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  c.out(0, pow(sum(pow(abs(x), p), dims, true), 1.0 / p));
}

void lower_instance_norm(NodeContext& c) {
  const Tensor& x = c.in(0);
  c.out(0, group_norm(x, x.size(1), c.in(1), c.in(2), c.attr_float("epsilon", 1e-5)));
}

}  // namespace

void add_nn_ops(OpTable& t) {
  t["MatMul"] = {lower_matmul, 0, 1, kFloatTypes};
  t["Gemm"] = {lower_gemm, 0, 6, kFloatTypes};
  t["Conv"] = {lower_conv, 0, 1, kFloatTypes};
  t["ConvTranspose"] = {lower_conv_transpose, 0, 1, kFloatTypes};
  t["BatchNormalization"] = {lower_batch_norm, 0, 6, kFloatTypes};
  t["MaxPool"] = {lower_max_pool, 0, 1, kFloatTypes};
  t["AveragePool"] = {lower_avg_pool, 0, 1, kFloatTypes};
  t["GlobalAveragePool"] = {lower_global_pool<false>, 0, 1, kFloatTypes};
  t["GlobalMaxPool"] = {lower_global_pool<true>, 0, 1, kFloatTypes};
  t["LayerNormalization"] = {lower_layer_norm, 0, 17, kFloatTypes};
  t["MaxUnpool"] = {lower_max_unpool, 1u << 2, 9, kFloatTypes};
  t["MeanVarianceNormalization"] = {lower_mvn, 0, 9, kFloatTypes};
  t["LpNormalization"] = {lower_lp_normalization, 0, 1, kFloatTypes};
  t["LpPool"] = {lower_lp_pool, 0, 11, kFloatTypes};
  t["GlobalLpPool"] = {lower_global_lp_pool, 0, 2, kFloatTypes};
  t["LRN"] = {lower_lrn, 0, 1, kFloatTypes};
  t["InstanceNormalization"] = {lower_instance_norm, 0, 6, kFloatTypes};
}

}  // namespace ath::onnx::detail
