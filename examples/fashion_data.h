// Fashion-MNIST in RAM for the plain-loop examples (the Trainer's data layer does this for you):
// images as float32 [N, 1, 28, 28] normalized with the dataset's mean and std, labels int64.
#pragma once

#include <athanor/athanor.h>
#include <athanor/io/idx.h>

#include <string>

struct FashionSplit {
  ath::Tensor images, labels;
};

inline FashionSplit load_fashion(const std::string& split,
                                 const std::string& dir = "/usr/share/datasets/fashion-mnist") {
  using namespace ath;
  Tensor raw = read_idx(dir + "/" + split + "-images-idx3-ubyte.gz");
  Tensor labels = read_idx(dir + "/" + split + "-labels-idx1-ubyte.gz");
  Tensor images = raw.to(kFloat32).unsqueeze(1);  // normalized in place: no big temporaries
  images.mul_(1.0 / (255.0 * 0.3530)).sub_(scalar_tensor(0.2860 / 0.3530));
  return {images, labels.to(kInt64)};
}

// Accuracy of model on a split, in eval mode, batches of 1000.
template <class Model>
double accuracy(Model& model, const FashionSplit& data) {
  using namespace ath;
  model.eval();
  InferenceMode no_autograd;
  int64_t correct = 0, n = data.labels.size(0);
  for (int64_t i = 0; i < n; i += 1000) {
    Tensor logits = model(data.images.slice(0, i, i + 1000));
    correct += eq(argmax(logits, 1), data.labels.slice(0, i, i + 1000)).sum().item<int64_t>();
  }
  model.train();
  return static_cast<double>(correct) / static_cast<double>(n);
}
