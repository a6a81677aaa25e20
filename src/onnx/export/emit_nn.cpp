// Convolution (plain and transposed), pooling, normalization, embedding. Only what the inference
// form needs: batch norm with running statistics (eval), max pooling's values (its indices are
// a training-time output whose layout ONNX defines differently), layer norm as
// LayerNormalization (opset 17) or, below, as the reductions it is made of, group norm through
// InstanceNormalization.
#include <algorithm>
#include <array>

#include "athanor/ops/conv.h"
#include "athanor/ops/creation.h"
#include "athanor/ops/nn_functional.h"
#include "emitters.h"

namespace ath::onnx::detail {

namespace {

void require_4d(EmitContext& c) {
  if (c.in_meta(0).shape.size() != 4) c.unsupported("an input that is not [N, C, H, W]");
}

// Conv, or ConvTranspose for the transposed form (conv_transpose2d). Both take PyTorch's weight
// layout ([out, in/groups, kh, kw] and [in, out/groups, kh, kw]). The transposed op folds
// output_padding into its end padding (pad_r = padding - output_padding, possibly negative);
// ONNX wants pads >= 0 and output_padding apart, so the end pad is split back the way
// PyTorch's exporter writes it: symmetric pads, the difference as output_padding.
void emit_convolution(EmitContext& c) {
  const ConvAttrs& a = c.attrs<ConvAttrs>();
  require_4d(c);
  std::vector<std::string> inputs{c.in(0), c.in(1)};
  if (c.num_inputs() == 3) inputs.push_back(c.in(2));
  ::onnx::NodeProto& n = c.add(a.transposed ? "ConvTranspose" : "Conv", inputs, {c.out(0)});
  const Shape& w = c.in_meta(1).shape;
  attr_ints(n, "kernel_shape", {w[2], w[3]});
  attr_ints(n, "strides", {a.stride[0], a.stride[1]});
  std::array<int64_t, 2> pad_end = a.pad_r, output_padding{0, 0};
  if (a.transposed) {
    for (std::size_t d = 0; d < 2; ++d) {
      output_padding[d] = std::max<int64_t>(0, a.pad_l[d] - a.pad_r[d]);
      pad_end[d] = a.pad_r[d] + output_padding[d];
    }
  }
  attr_ints(n, "pads", {a.pad_l[0], a.pad_l[1], pad_end[0], pad_end[1]});
  attr_ints(n, "dilations", {a.dilation[0], a.dilation[1]});
  attr_i(n, "group", a.groups);
  if (output_padding[0] != 0 || output_padding[1] != 0)
    attr_ints(n, "output_padding", {output_padding[0], output_padding[1]});
}

void emit_max_pool2d(EmitContext& c) {
  const MaxPool2dAttrs& a = c.attrs<MaxPool2dAttrs>();
  require_4d(c);
  if (c.out_used(1)) c.unsupported("max_pool2d's indices read by the model");
  ::onnx::NodeProto& n = c.add("MaxPool", {c.in(0)}, {c.out(0)});
  attr_ints(n, "kernel_shape", {a.kernel[0], a.kernel[1]});
  attr_ints(n, "strides", {a.stride[0], a.stride[1]});
  attr_ints(n, "pads", {a.padding[0], a.padding[1], a.padding[0], a.padding[1]});
  attr_ints(n, "dilations", {a.dilation[0], a.dilation[1]});
  if (a.ceil_mode) attr_i(n, "ceil_mode", 1);
}

void emit_avg_pool2d(EmitContext& c) {
  const AvgPool2dAttrs& a = c.attrs<AvgPool2dAttrs>();
  require_4d(c);
  if (a.divisor_override != 0) c.unsupported("avg_pool2d with divisor_override");
  if (a.ceil_mode) {
    // PyTorch and ONNX count the padding of a partial last window differently: only a
    // ceil_mode that adds no window is exported.
    const Shape& x = c.in_meta(0).shape;
    const Shape& y = c.out_meta(0).shape;
    for (int d = 0; d < 2; ++d) {
      if (pool_output_size(x[2 + d], a.kernel[d], a.padding[d], a.stride[d], 1, false) != y[2 + d])
        c.unsupported("avg_pool2d with ceil_mode adding a partial window");
    }
  }
  ::onnx::NodeProto& n = c.add("AveragePool", {c.in(0)}, {c.out(0)});
  attr_ints(n, "kernel_shape", {a.kernel[0], a.kernel[1]});
  attr_ints(n, "strides", {a.stride[0], a.stride[1]});
  attr_ints(n, "pads", {a.padding[0], a.padding[1], a.padding[0], a.padding[1]});
  if (a.count_include_pad) attr_i(n, "count_include_pad", 1);
}

void emit_adaptive_avg_pool2d(EmitContext& c) {
  const AdaptivePoolAttrs& a = c.attrs<AdaptivePoolAttrs>();
  require_4d(c);
  if (a.output[0] == 1 && a.output[1] == 1) {
    c.add("GlobalAveragePool", {c.in(0)}, {c.out(0)});
    return;
  }
  const Shape& x = c.in_meta(0).shape;
  if (x[2] % a.output[0] != 0 || x[3] % a.output[1] != 0)
    c.unsupported("adaptive_avg_pool2d whose windows are not all the same size");
  const int64_t kh = x[2] / a.output[0], kw = x[3] / a.output[1];
  ::onnx::NodeProto& n = c.add("AveragePool", {c.in(0)}, {c.out(0)});
  attr_ints(n, "kernel_shape", {kh, kw});
  attr_ints(n, "strides", {kh, kw});
}

// The weight or bias input i, or a constant of `fill` shaped like `shape` when absent.
std::string param_or(EmitContext& c, int i, bool present, const Shape& shape, double fill) {
  return present ? c.in(i) : c.constant(full(shape, fill, c.in_meta(0).dtype), "param");
}

// Inputs (x, running_mean, running_var, weight, bias).
void emit_batch_norm(EmitContext& c) {
  const BatchNormAttrs& a = c.attrs<BatchNormAttrs>();
  if (a.training) c.unsupported("batch norm with batch statistics (training mode)");
  for (int i = 1; i < 4; ++i) {
    if (c.out_used(i)) c.unsupported("batch norm's saved statistics read by the model");
  }
  const Shape channels{c.in_meta(0).shape[1]};
  ::onnx::NodeProto& n = c.add("BatchNormalization",
                               {c.in(0), param_or(c, 3, a.has_weight, channels, 1),
                                param_or(c, 4, a.has_bias, channels, 0), c.in(1), c.in(2)},
                               {c.out(0)});
  attr_f(n, "epsilon", a.eps);
}

// Inputs (x, weight, bias); outputs (y, mean, rstd), the statistics keeping x's rank.
void emit_layer_norm(EmitContext& c) {
  const LayerNormAttrs& a = c.attrs<LayerNormAttrs>();
  const auto k = static_cast<int64_t>(a.normalized_shape.size());
  const std::string scale = param_or(c, 1, a.has_weight, a.normalized_shape, 1);
  if (c.opset() >= 17) {
    std::vector<std::string> outs{c.out(0)};
    if (c.out_used(1) || c.out_used(2)) outs.push_back(c.out(1));
    if (c.out_used(2)) outs.push_back(c.out(2));
    std::vector<std::string> ins{c.in(0), scale};
    if (a.has_bias) ins.push_back(c.in(2));
    ::onnx::NodeProto& n = c.add("LayerNormalization", ins, outs);
    attr_i(n, "axis", -k);
    attr_f(n, "epsilon", a.eps);
    return;
  }
  std::vector<int64_t> axes;
  for (int64_t d = -k; d < 0; ++d) axes.push_back(d);
  const DType t = c.in_meta(0).dtype;
  auto reduce_mean = [&](const std::string& x, const std::string& out) {
    ::onnx::NodeProto& n = c.add("ReduceMean", {x}, {out});
    attr_ints(n, "axes", axes);
    return out;
  };
  const std::string mean = reduce_mean(c.in(0), c.out_used(1) ? c.out(1) : c.fresh("mean"));
  const std::string d = c.op("Sub", {c.in(0), mean});
  const std::string var = reduce_mean(c.op("Mul", {d, d}), c.fresh("var"));
  const std::string rstd_in = c.op("Sqrt", {c.op("Add", {var, c.scalar(a.eps, t)})});
  const std::string rstd = c.out_used(2) ? c.out(2) : c.fresh("rstd");
  c.add("Reciprocal", {rstd_in}, {rstd});
  const std::string y = c.op("Mul", {c.op("Mul", {d, rstd}), scale});
  c.add(a.has_bias ? "Add" : "Identity", a.has_bias ? std::vector{y, c.in(2)} : std::vector{y},
        {c.out(0)});
}

// Inputs (x, weight, bias); outputs (y, mean [N, G], rstd [N, G]). GroupNormalization only
// arrived in opset 18, so: x [N, C, *] reshaped to [N, G, C/G * ...], InstanceNormalization
// with unit scale and zero bias (per sample and group: exactly group norm's statistics; the
// importer runs it as group_norm), reshaped back, then the per-channel affine.
void emit_group_norm(EmitContext& c) {
  const GroupNormAttrs& a = c.attrs<GroupNormAttrs>();
  if (c.out_used(1) || c.out_used(2)) c.unsupported("group norm's statistics read by the model");
  const Shape& x = c.in_meta(0).shape;
  const DType t = c.in_meta(0).dtype;
  const auto rank = static_cast<int64_t>(x.size());
  const Shape groups{a.num_groups};
  // 0 in a Reshape target copies the input's dim: the batch stays symbolic.
  const std::string grouped = c.op("Reshape", {c.in(0), c.ints({0, a.num_groups, -1})});
  ::onnx::NodeProto* norm = nullptr;
  const std::string normed = c.op(
      "InstanceNormalization",
      {grouped, c.constant(ones(groups, t), "scale"), c.constant(zeros(groups, t), "bias")}, &norm);
  attr_f(*norm, "epsilon", a.eps);
  std::vector<int64_t> shape(x.begin(), x.end());
  shape[0] = 0;
  const bool w = a.has_weight, b = a.has_bias;
  std::string y = w || b ? c.fresh("Reshape") : c.out(0);
  c.add("Reshape", {normed, c.ints(shape)}, {y});
  // weight, bias [C] -> [C, 1, ...] against [N, C, *].
  std::vector<int64_t> trailing;
  for (int64_t d = 1; d < rank - 1; ++d) trailing.push_back(d);
  auto per_channel = [&](int i) {
    return trailing.empty() ? c.in(i) : c.op("Unsqueeze", {c.in(i), c.ints(trailing)});
  };
  if (w) {
    const std::string scaled = b ? c.fresh("Mul") : c.out(0);
    c.add("Mul", {y, per_channel(1)}, {scaled});
    y = scaled;
  }
  if (b) c.add("Add", {y, per_channel(2)}, {c.out(0)});
}

// embedding(weight, indices): the rows of weight at indices.
void emit_embedding(EmitContext& c) {
  attr_i(c.add("Gather", {c.in(0), c.in(1)}, {c.out(0)}), "axis", 0);
}

}  // namespace

void add_nn_emitters(EmitTable& t) {
  t[&op_convolution()] = {emit_convolution};
  t[&op_max_pool2d()] = {emit_max_pool2d};
  t[&op_avg_pool2d()] = {emit_avg_pool2d};
  t[&op_adaptive_avg_pool2d()] = {emit_adaptive_avg_pool2d};
  t[&op_batch_norm()] = {emit_batch_norm};
  t[&op_layer_norm()] = {emit_layer_norm};
  t[&op_group_norm()] = {emit_group_norm};
  t[&op_embedding()] = {emit_embedding};
}

}  // namespace ath::onnx::detail
