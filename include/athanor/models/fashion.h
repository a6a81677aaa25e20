// Fashion-MNIST classifiers of WORKLOADS.md (W1, W2), also the CLI's built-in models. Built as
// Sequentials, so their parameter names ("1.weight", "3.weight", ...) equal those of the same
// torch.nn.Sequential and weights move between the two through safetensors.
//
//   auto cnn = models::fashion_cnn();             // W2: 421,642 parameters
//   Tensor images = randn({4, 1, 28, 28});
//   Tensor logits = (*cnn)(images);               // [B, 1, 28, 28] -> [B, 10]
//   assert(cnn->num_parameters() == 421642);
#pragma once

#include <memory>

#include "athanor/nn/sequential.h"

namespace ath::models {

// W1: Flatten -> Linear(784, 512) -> ReLU -> Linear(512, 256) -> ReLU -> Linear(256, 10);
// 535,818 parameters.
std::shared_ptr<nn::Sequential> fashion_mlp();

// W2: Conv2d(1, 32, 3, pad 1) -> ReLU -> MaxPool2d(2) -> Conv2d(32, 64, 3, pad 1) -> ReLU ->
// MaxPool2d(2) -> Flatten -> Linear(3136, 128) -> ReLU -> Linear(128, 10); 421,642 parameters.
std::shared_ptr<nn::Sequential> fashion_cnn();

}  // namespace ath::models
