#include "athanor/models/resnet.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "athanor/core/error.h"
#include "athanor/nn/init.h"
#include "athanor/ops/activations.h"
#include "athanor/ops/conv.h"

namespace ath::models {
namespace {

nn::Conv2d conv3x3(int64_t in, int64_t out, int64_t stride) {
  return nn::Conv2d(
      {.in = in, .out = out, .kernel = 3, .stride = stride, .padding = 1, .bias = false});
}

// torchvision's ResNet.__init__ loop: every conv gets kaiming_normal_(fan_out, relu), every
// BatchNorm weight 1 / bias 0 (already their defaults), Linear keeps its own init.
void torchvision_init(nn::Module& root) {
  root.apply([](nn::Module& m) {
    if (auto* conv = dynamic_cast<nn::Conv2d*>(&m)) {
      nn::init::kaiming_normal_(conv->weight,
                                {.mode = nn::init::FanMode::FanOut, .nonlinearity = "relu"});
    }
  });
}

}  // namespace

BasicBlock::BasicBlock(int64_t in, int64_t out, int64_t stride)
    : Module("BasicBlock"),
      conv1(conv3x3(in, out, stride)),
      bn1({.features = out}),
      conv2(conv3x3(out, out, 1)),
      bn2({.features = out}) {
  register_module("conv1", conv1);
  register_module("bn1", bn1);
  register_module("conv2", conv2);
  register_module("bn2", bn2);
  if (stride != 1 || in != out) {
    downsample = std::make_shared<nn::Sequential>();
    downsample->emplace_back<nn::Conv2d>(
        nn::Conv2dOptions{.in = in, .out = out, .kernel = 1, .stride = stride, .bias = false});
    downsample->emplace_back<nn::BatchNorm2d>(nn::BatchNormOptions{.features = out});
    register_module("downsample", downsample);
  }
}

Tensor BasicBlock::forward(const Tensor& x) {
  Tensor out = relu(bn1(conv1(x)));
  out = bn2(conv2(out));
  Tensor identity = downsample ? (*downsample)(x) : x;
  return relu(out + identity);
}

ResNet::ResNet(ResNetOptions opts)
    : Module("ResNet"),
      options(opts),
      conv1(opts.small_input ? nn::Conv2d({.in = opts.in_channels,
                                           .out = opts.width,
                                           .kernel = 3,
                                           .padding = 1,
                                           .bias = false})
                             : nn::Conv2d({.in = opts.in_channels,
                                           .out = opts.width,
                                           .kernel = 7,
                                           .stride = 2,
                                           .padding = 3,
                                           .bias = false})),
      bn1({.features = opts.width}),
      avgpool({.output_size = 1}),
      fc({.in = opts.width * 8, .out = opts.num_classes}) {
  ATH_CHECK(opts.width > 0 && opts.in_channels > 0 && opts.num_classes > 0, ValueError,
            "ResNet: width, in_channels and num_classes must be positive, got {}, {}, {}",
            opts.width, opts.in_channels, opts.num_classes);
  for (int64_t n : opts.layers) {
    ATH_CHECK(n > 0, ValueError, "ResNet: every stage needs at least one block, got layers {}",
              fmt::join(opts.layers, ", "));
  }
  register_module("conv1", conv1);
  register_module("bn1", bn1);
  int64_t in = opts.width;
  for (int s = 0; s < 4; ++s) {
    const int64_t out = opts.width << s;
    auto stage = std::make_shared<nn::Sequential>();
    for (int64_t b = 0; b < opts.layers[s]; ++b) {
      stage->emplace_back<BasicBlock>(in, out, b == 0 && s > 0 ? 2 : 1);
      in = out;
    }
    stages[s] = register_module(fmt::format("layer{}", s + 1), stage);
  }
  register_module("avgpool", avgpool);
  register_module("fc", fc);
  torchvision_init(*this);
}

Tensor ResNet::forward(const Tensor& x) {
  Tensor h = relu(bn1(conv1(x)));
  if (!options.small_input) h = max_pool2d(h, {.kernel = 3, .stride = 2, .padding = 1});
  for (auto& stage : stages) h = (*stage)(h);
  return fc(avgpool(h).flatten(1));
}

std::string ResNet::extra_repr() const {
  return fmt::format("layers=[{}], num_classes={}, in_channels={}, width={}, small_input={}",
                     fmt::join(options.layers, ", "), options.num_classes, options.in_channels,
                     options.width, options.small_input ? "True" : "False");
}

}  // namespace ath::models
