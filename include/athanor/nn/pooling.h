// Pooling layers over NCHW (or unbatched CHW) tensors: MaxPool2d, AvgPool2d, AdaptiveAvgPool2d,
// with PyTorch's arguments and reprs. They hold no parameters. The options are the functional
// ops' own (athanor/ops/conv.h): stride defaults to the kernel size.
//
//   Tensor x = randn({2, 8, 28, 28});
//   nn::MaxPool2d pool({.kernel = 2});                          // halves H and W
//   nn::MaxPool2d ceil({.kernel = 3, .stride = 2, .padding = 1, .ceil_mode = true});
//   nn::AvgPool2d avg({.kernel = 3, .padding = 1, .count_include_pad = false});
//   nn::AdaptiveAvgPool2d gap({.output_size = 1});             // global average pooling
//   assert(pool(x).shape() == Shape({2, 8, 14, 14}) && gap(x).shape() == Shape({2, 8, 1, 1}));
//   Tensor y = avg(ceil(x));                                   // [2, 8, 14, 14]
#pragma once

#include "athanor/nn/module.h"
#include "athanor/ops/conv.h"

namespace ath::nn {

// kernel, stride (default: kernel), padding (at most half the kernel), dilation, ceil_mode.
using MaxPool2dOptions = ath::MaxPool2dOptions;
// kernel, stride (default: kernel), padding, ceil_mode, count_include_pad, divisor_override.
using AvgPool2dOptions = ath::AvgPool2dOptions;

struct AdaptiveAvgPool2dOptions {
  Int2 output_size;
};

class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(MaxPool2dOptions options);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  MaxPool2dOptions options;  // stride filled in with the kernel when unset
};

class AvgPool2d : public Module {
 public:
  explicit AvgPool2d(AvgPool2dOptions options);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  AvgPool2dOptions options;  // stride filled in with the kernel when unset
};

class AdaptiveAvgPool2d : public Module {
 public:
  explicit AdaptiveAvgPool2d(AdaptiveAvgPool2dOptions options);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  AdaptiveAvgPool2dOptions options;
};

}  // namespace ath::nn
