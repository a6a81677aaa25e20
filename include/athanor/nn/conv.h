// Convolution layers: Conv1d, Conv2d, ConvTranspose2d, with PyTorch's arguments, parameter names
// (weight, bias), initialisation (kaiming_uniform_ with a = sqrt(5), i.e. U(-1/sqrt(fan_in),
// 1/sqrt(fan_in)) for the weight and the same bound for the bias) and reprs. They run the
// functional ops of athanor/ops/conv.h; nn::Conv2dOptions (the layer's configuration, channels
// and kernel included) is not ath::Conv2dOptions (the functional call's arguments).
//
//   Tensor x = randn({2, 1, 28, 28});
//   nn::Conv2d conv({.in = 1, .out = 32, .kernel = 3, .padding = 1});
//   Tensor y = conv(x);                                  // [N, 1, H, W] -> [N, 32, H, W]
//   nn::Conv2d same({.in = 8, .out = 8, .kernel = 3, .padding = "same", .dilation = 2,
//                    .groups = 4});
//   nn::ConvTranspose2d up({.in = 32, .out = 16, .kernel = 3, .stride = 2, .padding = 1,
//                           .output_padding = 1});   // doubles H and W
//   assert(up(y).shape() == Shape({2, 16, 56, 56}));
//   Tensor u = up.forward(y, Shape{55, 55});           // or pick the output size explicitly
//
// padding_mode "zeros" is the only one implemented: "reflect", "replicate" and "circular" throw
// NotImplementedError.
#pragma once

#include <string>

#include "athanor/nn/module.h"
#include "athanor/ops/conv.h"

namespace ath::nn {

struct Conv1dOptions {
  int64_t in = 0;   // PyTorch's in_channels
  int64_t out = 0;  // out_channels
  int64_t kernel = 0;
  int64_t stride = 1;
  ConvPadding padding = 0;  // a size, "valid" or "same"
  int64_t dilation = 1;
  int64_t groups = 1;
  bool bias = true;
  std::string padding_mode = "zeros";
  DType dtype = kFloat32;
};

struct Conv2dOptions {
  int64_t in = 0;
  int64_t out = 0;
  Int2 kernel;
  Int2 stride = 1;
  ConvPadding padding = 0;  // a size, a pair, "valid" or "same"
  Int2 dilation = 1;
  int64_t groups = 1;
  bool bias = true;
  std::string padding_mode = "zeros";
  DType dtype = kFloat32;
};

// PyTorch's argument order: output_padding comes before groups, dilation last.
struct ConvTranspose2dOptions {
  int64_t in = 0;
  int64_t out = 0;
  Int2 kernel;
  Int2 stride = 1;
  Int2 padding = 0;
  Int2 output_padding = 0;  // extra rows/cols at the bottom/right; < stride or < dilation
  int64_t groups = 1;
  bool bias = true;
  Int2 dilation = 1;
  std::string padding_mode = "zeros";  // the only mode PyTorch supports here
  DType dtype = kFloat32;
};

class Conv1d : public Module {
 public:
  explicit Conv1d(Conv1dOptions options);
  Tensor forward(const Tensor& x) override;  // [N, in, L] or [in, L]
  std::string extra_repr() const override;
  void reset_parameters();

  Conv1dOptions options;
  Tensor weight;  // [out, in / groups, kernel]
  Tensor bias;    // [out], undefined when options.bias is false
};

class Conv2d : public Module {
 public:
  explicit Conv2d(Conv2dOptions options);
  Tensor forward(const Tensor& x) override;  // [N, in, H, W] or [in, H, W]
  std::string extra_repr() const override;
  void reset_parameters();

  Conv2dOptions options;
  Tensor weight;  // [out, in / groups, kh, kw]
  Tensor bias;    // [out]
};

class ConvTranspose2d : public Module {
 public:
  explicit ConvTranspose2d(ConvTranspose2dOptions options);
  Tensor forward(const Tensor& x) override;
  // PyTorch's forward(input, output_size): the output's spatial size (last two entries of
  // output_size) picks output_padding for this call; ValueError when it is out of reach.
  Tensor forward(const Tensor& x, const Shape& output_size);
  std::string extra_repr() const override;
  void reset_parameters();

  ConvTranspose2dOptions options;
  Tensor weight;  // [in, out / groups, kh, kw]
  Tensor bias;    // [out]
};

}  // namespace ath::nn
