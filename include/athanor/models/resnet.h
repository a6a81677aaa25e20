// torchvision's ResNet with BasicBlock (resnet18, resnet34), also the CLI's "resnet" model.
// Parameter and buffer names equal torchvision's (conv1, bn1, layer1.0.conv1,
// layer2.0.downsample.0, fc, ...), so torchvision weights load through safetensors; the
// initialisation is torchvision's too (kaiming_normal_ fan_out/relu for convolutions, BatchNorm
// weight 1 and bias 0, the default Linear init for fc).
//
//   models::ResNet net(models::resnet18_options());              // 11,689,512 parameters
//   Tensor images = randn({1, 3, 64, 64});                       // ImageNet's are 224 x 224
//   Tensor logits = net(images);                                 // [N, 3, H, W] -> [N, 1000]
//   assert(net.num_parameters() == 11689512);
//   models::ResNet small({.num_classes = 10, .in_channels = 1, .width = 16, .small_input = true});
//   Tensor x = randn({2, 1, 28, 28});
//   Tensor y = small(x);                                         // [N, 1, 28, 28] -> [N, 10]
//
// small_input swaps the 7x7 stride-2 stem and its max-pool for a 3x3 stride-1 convolution
// (the usual CIFAR/MNIST variant); the parameter names stay the same.
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "athanor/nn/batch_norm.h"
#include "athanor/nn/conv.h"
#include "athanor/nn/linear.h"
#include "athanor/nn/pooling.h"
#include "athanor/nn/sequential.h"

namespace ath::models {

struct ResNetOptions {
  std::array<int64_t, 4> layers = {2, 2, 2, 2};  // BasicBlocks per stage (resnet18)
  int64_t num_classes = 1000;
  int64_t in_channels = 3;
  int64_t width = 64;        // channels of the first stage; stages double it
  bool small_input = false;  // 3x3 stride-1 stem and no max-pool
};

inline ResNetOptions resnet18_options() { return {}; }
inline ResNetOptions resnet34_options() { return {.layers = {3, 4, 6, 3}}; }

// torchvision's BasicBlock: conv3x3 -> bn -> relu -> conv3x3 -> bn, plus the identity (or a
// 1x1 strided conv + bn "downsample" when the shape changes), then relu.
class BasicBlock : public nn::Module {
 public:
  BasicBlock(int64_t in, int64_t out, int64_t stride);
  Tensor forward(const Tensor& x) override;

  nn::Conv2d conv1;
  nn::BatchNorm2d bn1;
  nn::Conv2d conv2;
  nn::BatchNorm2d bn2;
  std::shared_ptr<nn::Sequential> downsample;  // null when the identity fits
};

class ResNet : public nn::Module {
 public:
  explicit ResNet(ResNetOptions options = {});
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  ResNetOptions options;
  nn::Conv2d conv1;
  nn::BatchNorm2d bn1;
  std::array<std::shared_ptr<nn::Sequential>, 4> stages;  // "layer1" .. "layer4"
  nn::AdaptiveAvgPool2d avgpool;
  nn::Linear fc;
};

}  // namespace ath::models
