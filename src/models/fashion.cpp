#include "athanor/models/fashion.h"

#include "athanor/nn/activation.h"
#include "athanor/nn/conv.h"
#include "athanor/nn/flatten.h"
#include "athanor/nn/linear.h"
#include "athanor/nn/pooling.h"

namespace ath::models {

std::shared_ptr<nn::Sequential> fashion_mlp() {
  auto m = std::make_shared<nn::Sequential>();
  m->emplace_back<nn::Flatten>();
  m->emplace_back<nn::Linear>(nn::LinearOptions{.in = 784, .out = 512});
  m->emplace_back<nn::ReLU>();
  m->emplace_back<nn::Linear>(nn::LinearOptions{.in = 512, .out = 256});
  m->emplace_back<nn::ReLU>();
  m->emplace_back<nn::Linear>(nn::LinearOptions{.in = 256, .out = 10});
  return m;
}

std::shared_ptr<nn::Sequential> fashion_cnn() {
  auto m = std::make_shared<nn::Sequential>();
  m->emplace_back<nn::Conv2d>(nn::Conv2dOptions{.in = 1, .out = 32, .kernel = 3, .padding = 1});
  m->emplace_back<nn::ReLU>();
  m->emplace_back<nn::MaxPool2d>(nn::MaxPool2dOptions{.kernel = 2});
  m->emplace_back<nn::Conv2d>(nn::Conv2dOptions{.in = 32, .out = 64, .kernel = 3, .padding = 1});
  m->emplace_back<nn::ReLU>();
  m->emplace_back<nn::MaxPool2d>(nn::MaxPool2dOptions{.kernel = 2});
  m->emplace_back<nn::Flatten>();
  m->emplace_back<nn::Linear>(nn::LinearOptions{.in = 3136, .out = 128});
  m->emplace_back<nn::ReLU>();
  m->emplace_back<nn::Linear>(nn::LinearOptions{.in = 128, .out = 10});
  return m;
}

}  // namespace ath::models
