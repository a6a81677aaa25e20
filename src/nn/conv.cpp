#include "athanor/nn/conv.h"

#include <cmath>
#include <vector>

#include "athanor/core/error.h"
#include "athanor/nn/init.h"
#include "athanor/ops/ops.h"
#include "repr.h"

namespace ath::nn {

namespace {

// The checks PyTorch's _ConvNd.__init__ makes (plus sizes it leaves to the first forward), each
// error naming the layer.
void check_channels(const char* layer, int64_t in, int64_t out, int64_t groups,
                    const std::string& padding_mode) {
  ATH_CHECK(in >= 0 && out >= 0, ValueError,
            "{}: in and out channels must be non-negative, got in={} out={}", layer, in, out);
  ATH_CHECK(groups >= 1, ValueError, "{}: groups must be a positive integer, got {}", layer,
            groups);
  ATH_CHECK(in % groups == 0, ValueError, "{}: in channels ({}) must be divisible by groups ({})",
            layer, in, groups);
  ATH_CHECK(out % groups == 0, ValueError, "{}: out channels ({}) must be divisible by groups ({})",
            layer, out, groups);
  if (padding_mode == "zeros") return;
  const bool known =
      padding_mode == "reflect" || padding_mode == "replicate" || padding_mode == "circular";
  if (known) {
    ATH_THROW(NotImplementedError, "{}: padding_mode '{}' is not implemented (only 'zeros')", layer,
              padding_mode);
  }
  ATH_THROW(ValueError,
            "{}: padding_mode must be one of 'zeros', 'reflect', 'replicate' or 'circular', got "
            "'{}'",
            layer, padding_mode);
}

void check_positive(const char* layer, const char* what, const Int2& v) {
  ATH_CHECK(v[0] >= 1 && v[1] >= 1, ValueError, "{}: {} must be positive, got ({}, {})", layer,
            what, v[0], v[1]);
}

void check_non_negative(const char* layer, const char* what, const Int2& v) {
  ATH_CHECK(v[0] >= 0 && v[1] >= 0, ValueError, "{}: {} must be non-negative, got ({}, {})", layer,
            what, v[0], v[1]);
}

void check_padding(const char* layer, const ConvPadding& p, const Int2& stride) {
  if (p.mode.empty()) return check_non_negative(layer, "padding", p.value);
  ATH_CHECK(p.mode == "same" || p.mode == "valid", ValueError,
            "{}: invalid padding string '{}', should be one of 'valid' or 'same'", layer, p.mode);
  ATH_CHECK(p.mode != "same" || (stride[0] == 1 && stride[1] == 1), ValueError,
            "{}: padding='same' is not supported for strided convolutions", layer);
}

// PyTorch's _ConvNd.reset_parameters: weight ~ kaiming_uniform_(a = sqrt(5)), which is
// U(-1/sqrt(fan_in), 1/sqrt(fan_in)); bias ~ U with the same bound.
void reset_conv(const Tensor& weight, const Tensor& bias) {
  init::kaiming_uniform_(weight, {.a = std::sqrt(5.0)});
  if (!bias.defined()) return;
  const int64_t fan_in = init::fan_in_and_fan_out(weight).first;
  if (fan_in == 0) return;
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  init::uniform_(bias, -bound, bound);
}

std::optional<Tensor> optional_bias(const Tensor& b) {
  return b.defined() ? std::optional<Tensor>(b) : std::nullopt;
}

// PyTorch's _ConvNd.extra_repr, given each option as Python would print it.
struct ConvRepr {
  int64_t in, out;
  std::vector<int64_t> kernel, stride, dilation, output_padding;
  std::string padding;  // "" when all zeros
  int64_t groups;
  bool bias;
};

std::string conv_repr(const ConvRepr& r) {
  using detail::py_tuple;
  auto all = [](const std::vector<int64_t>& v, int64_t x) {
    for (int64_t e : v) {
      if (e != x) return false;
    }
    return true;
  };
  std::string s = fmt::format("{}, {}, kernel_size={}, stride={}", r.in, r.out, py_tuple(r.kernel),
                              py_tuple(r.stride));
  if (!r.padding.empty()) s += ", padding=" + r.padding;
  if (!all(r.dilation, 1)) s += ", dilation=" + py_tuple(r.dilation);
  if (!all(r.output_padding, 0)) s += ", output_padding=" + py_tuple(r.output_padding);
  if (r.groups != 1) s += fmt::format(", groups={}", r.groups);
  if (!r.bias) s += ", bias=False";
  return s;
}

std::string padding_repr(const ConvPadding& p, std::size_t dims) {
  if (!p.mode.empty()) return p.mode;
  if (p.value[0] == 0 && p.value[1] == 0) return {};
  if (dims == 1) return detail::py_tuple({p.value[1]});
  return detail::py_tuple({p.value[0], p.value[1]});
}

std::vector<int64_t> pair(const Int2& v) { return {v[0], v[1]}; }

}  // namespace

// ---- Conv1d -------------------------------------------------------------------------------------

Conv1d::Conv1d(Conv1dOptions o) : Module("Conv1d"), options(std::move(o)) {
  const Conv1dOptions& c = options;
  check_channels("Conv1d", c.in, c.out, c.groups, c.padding_mode);
  check_positive("Conv1d", "kernel", Int2(c.kernel));
  check_positive("Conv1d", "stride", Int2(c.stride));
  check_positive("Conv1d", "dilation", Int2(c.dilation));
  ATH_CHECK(!c.padding.mode.empty() || c.padding.value[0] == c.padding.value[1], ValueError,
            "Conv1d: padding takes one size, got ({}, {})", c.padding.value[0], c.padding.value[1]);
  check_padding("Conv1d", c.padding, Int2(1, c.stride));
  weight = register_parameter("weight", empty({c.out, c.in / c.groups, c.kernel}, c.dtype));
  bias = register_parameter("bias", c.bias ? empty({c.out}, c.dtype) : Tensor());
  reset_parameters();
}

void Conv1d::reset_parameters() { reset_conv(weight, bias); }

Tensor Conv1d::forward(const Tensor& x) {
  return conv1d(x, weight, optional_bias(bias),
                {.stride = options.stride,
                 .padding = options.padding,
                 .dilation = options.dilation,
                 .groups = options.groups});
}

std::string Conv1d::extra_repr() const {
  return conv_repr({.in = options.in,
                    .out = options.out,
                    .kernel = {options.kernel},
                    .stride = {options.stride},
                    .dilation = {options.dilation},
                    .output_padding = {0},
                    .padding = padding_repr(options.padding, 1),
                    .groups = options.groups,
                    .bias = options.bias});
}

// ---- Conv2d -------------------------------------------------------------------------------------

Conv2d::Conv2d(Conv2dOptions o) : Module("Conv2d"), options(std::move(o)) {
  const Conv2dOptions& c = options;
  check_channels("Conv2d", c.in, c.out, c.groups, c.padding_mode);
  check_positive("Conv2d", "kernel", c.kernel);
  check_positive("Conv2d", "stride", c.stride);
  check_positive("Conv2d", "dilation", c.dilation);
  check_padding("Conv2d", c.padding, c.stride);
  weight = register_parameter("weight",
                              empty({c.out, c.in / c.groups, c.kernel[0], c.kernel[1]}, c.dtype));
  bias = register_parameter("bias", c.bias ? empty({c.out}, c.dtype) : Tensor());
  reset_parameters();
}

void Conv2d::reset_parameters() { reset_conv(weight, bias); }

Tensor Conv2d::forward(const Tensor& x) {
  return conv2d(x, weight, optional_bias(bias),
                {.stride = options.stride,
                 .padding = options.padding,
                 .dilation = options.dilation,
                 .groups = options.groups});
}

std::string Conv2d::extra_repr() const {
  return conv_repr({.in = options.in,
                    .out = options.out,
                    .kernel = pair(options.kernel),
                    .stride = pair(options.stride),
                    .dilation = pair(options.dilation),
                    .output_padding = {0, 0},
                    .padding = padding_repr(options.padding, 2),
                    .groups = options.groups,
                    .bias = options.bias});
}

// ---- ConvTranspose2d ----------------------------------------------------------------------------

ConvTranspose2d::ConvTranspose2d(ConvTranspose2dOptions o)
    : Module("ConvTranspose2d"), options(std::move(o)) {
  const ConvTranspose2dOptions& c = options;
  ATH_CHECK(c.padding_mode == "zeros", ValueError,
            "ConvTranspose2d: only padding_mode 'zeros' is supported, got '{}'", c.padding_mode);
  check_channels("ConvTranspose2d", c.in, c.out, c.groups, c.padding_mode);
  check_positive("ConvTranspose2d", "kernel", c.kernel);
  check_positive("ConvTranspose2d", "stride", c.stride);
  check_positive("ConvTranspose2d", "dilation", c.dilation);
  check_non_negative("ConvTranspose2d", "padding", c.padding);
  check_non_negative("ConvTranspose2d", "output_padding", c.output_padding);
  for (std::size_t i = 0; i < 2; ++i) {
    ATH_CHECK(c.output_padding[i] < c.stride[i] || c.output_padding[i] < c.dilation[i], ValueError,
              "ConvTranspose2d: output_padding ({}, {}) must be smaller than either stride ({}, "
              "{}) or dilation ({}, {})",
              c.output_padding[0], c.output_padding[1], c.stride[0], c.stride[1], c.dilation[0],
              c.dilation[1]);
  }
  // The transposed weight is [in, out / groups, kh, kw], so fan_in counts output channels.
  weight = register_parameter("weight",
                              empty({c.in, c.out / c.groups, c.kernel[0], c.kernel[1]}, c.dtype));
  bias = register_parameter("bias", c.bias ? empty({c.out}, c.dtype) : Tensor());
  reset_parameters();
}

void ConvTranspose2d::reset_parameters() { reset_conv(weight, bias); }

Tensor ConvTranspose2d::forward(const Tensor& x) {
  return conv_transpose2d(x, weight, optional_bias(bias),
                          {.stride = options.stride,
                           .padding = options.padding,
                           .output_padding = options.output_padding,
                           .groups = options.groups,
                           .dilation = options.dilation});
}

Tensor ConvTranspose2d::forward(const Tensor& x, const Shape& output_size) {
  ATH_CHECK(x.dim() == 3 || x.dim() == 4, ShapeError,
            "ConvTranspose2d: expected a 3-D (unbatched) or 4-D input, got shape {}",
            ath::to_string(x.shape()));
  const std::size_t n = output_size.size();
  ATH_CHECK(n == 2 || n == static_cast<std::size_t>(x.dim()), ValueError,
            "ConvTranspose2d: output_size must have 2 or {} elements, got {}", x.dim(),
            ath::to_string(output_size));
  // PyTorch's _output_padding: the sizes reachable with 0 <= output_padding < stride.
  Int2 min_size, max_size, output_padding;
  for (std::size_t i = 0; i < 2; ++i) {
    const int64_t in = x.size(x.dim() - 2 + static_cast<int64_t>(i));
    min_size.v[i] = (in - 1) * options.stride[i] - 2 * options.padding[i] +
                    options.dilation[i] * (options.kernel[i] - 1) + 1;
    max_size.v[i] = min_size[i] + options.stride[i] - 1;
  }
  for (std::size_t i = 0; i < 2; ++i) {
    const int64_t want = output_size[n - 2 + i];
    ATH_CHECK(want >= min_size[i] && want <= max_size[i], ValueError,
              "ConvTranspose2d: requested an output size of {}, but valid sizes range from "
              "[{}, {}] to [{}, {}] (for an input of shape {})",
              ath::to_string(output_size), min_size[0], min_size[1], max_size[0], max_size[1],
              ath::to_string(x.shape()));
    output_padding.v[i] = want - min_size[i];
  }
  return conv_transpose2d(x, weight, optional_bias(bias),
                          {.stride = options.stride,
                           .padding = options.padding,
                           .output_padding = output_padding,
                           .groups = options.groups,
                           .dilation = options.dilation});
}

std::string ConvTranspose2d::extra_repr() const {
  const Int2& p = options.padding;
  return conv_repr({.in = options.in,
                    .out = options.out,
                    .kernel = pair(options.kernel),
                    .stride = pair(options.stride),
                    .dilation = pair(options.dilation),
                    .output_padding = pair(options.output_padding),
                    .padding = p[0] == 0 && p[1] == 0 ? "" : detail::py_tuple(pair(p)),
                    .groups = options.groups,
                    .bias = options.bias});
}

}  // namespace ath::nn
