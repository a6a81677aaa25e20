#include "athanor/nn/pooling.h"

#include "athanor/core/error.h"
#include "athanor/ops/ops.h"
#include "repr.h"

namespace ath::nn {

namespace {

// The checks PyTorch leaves to the first forward, made at construction so that the error names
// the layer: positive kernel/stride/dilation, 0 <= padding <= kernel / 2.
void check_window(const char* layer, const Int2& kernel, const Int2& stride, const Int2& padding,
                  const Int2& dilation) {
  for (std::size_t i = 0; i < 2; ++i) {
    ATH_CHECK(kernel[i] >= 1, ValueError, "{}: kernel must be positive, got ({}, {})", layer,
              kernel[0], kernel[1]);
    ATH_CHECK(stride[i] >= 1, ValueError, "{}: stride must be positive, got ({}, {})", layer,
              stride[0], stride[1]);
    ATH_CHECK(dilation[i] >= 1, ValueError, "{}: dilation must be positive, got ({}, {})", layer,
              dilation[0], dilation[1]);
    ATH_CHECK(padding[i] >= 0 && 2 * padding[i] <= kernel[i], ValueError,
              "{}: padding ({}, {}) must be non-negative and at most half the kernel ({}, {})",
              layer, padding[0], padding[1], kernel[0], kernel[1]);
  }
}

}  // namespace

MaxPool2d::MaxPool2d(MaxPool2dOptions o) : Module("MaxPool2d"), options(o) {
  options.stride = options.stride.value_or(options.kernel);
  check_window("MaxPool2d", options.kernel, *options.stride.value, options.padding,
               options.dilation);
}

Tensor MaxPool2d::forward(const Tensor& x) { return max_pool2d(x, options); }

std::string MaxPool2d::extra_repr() const {
  using detail::int_or_pair;
  return fmt::format("kernel_size={}, stride={}, padding={}, dilation={}, ceil_mode={}",
                     int_or_pair(options.kernel), int_or_pair(*options.stride.value),
                     int_or_pair(options.padding), int_or_pair(options.dilation),
                     detail::py_bool(options.ceil_mode));
}

AvgPool2d::AvgPool2d(AvgPool2dOptions o) : Module("AvgPool2d"), options(o) {
  options.stride = options.stride.value_or(options.kernel);
  check_window("AvgPool2d", options.kernel, *options.stride.value, options.padding, Int2(1));
  ATH_CHECK(!options.divisor_override || *options.divisor_override != 0, ValueError,
            "AvgPool2d: divisor_override must be non-zero");
}

Tensor AvgPool2d::forward(const Tensor& x) { return avg_pool2d(x, options); }

// PyTorch's AvgPool2d repr shows only these three.
std::string AvgPool2d::extra_repr() const {
  using detail::int_or_pair;
  return fmt::format("kernel_size={}, stride={}, padding={}", int_or_pair(options.kernel),
                     int_or_pair(*options.stride.value), int_or_pair(options.padding));
}

AdaptiveAvgPool2d::AdaptiveAvgPool2d(AdaptiveAvgPool2dOptions o)
    : Module("AdaptiveAvgPool2d"), options(o) {
  ATH_CHECK(o.output_size[0] >= 1 && o.output_size[1] >= 1, ValueError,
            "AdaptiveAvgPool2d: output_size must be positive, got ({}, {})", o.output_size[0],
            o.output_size[1]);
}

Tensor AdaptiveAvgPool2d::forward(const Tensor& x) {
  return adaptive_avg_pool2d(x, options.output_size);
}

std::string AdaptiveAvgPool2d::extra_repr() const {
  return "output_size=" + detail::int_or_pair(options.output_size);
}

}  // namespace ath::nn
