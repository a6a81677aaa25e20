// Image transforms on tensors, torchvision's semantics: they act on the last dims of a
// [..., C, H, W] (CHW or NCHW) tensor; random ones draw from data::sample_generator(), so inside
// a DataLoader they are reproducible per (seed, epoch, sample position), and on an NCHW batch
// the same random choice applies to every image (as torchvision does for tensors).
//
//   data::Compose augment({data::RandomCrop(28, /*padding=*/4), data::RandomHorizontalFlip(),
//                          data::Normalize({0.2860}, {0.3530})});
//   Tensor image = rand({1, 28, 28});
//   Tensor out = augment(image);   // float32 [1, 28, 28] -> float32 [1, 28, 28]
//   assert(out.shape() == image.shape());
//
// Results are new contiguous tensors (inputs are never modified).
#pragma once

#include <functional>
#include <vector>

#include "athanor/tensor/tensor.h"

namespace ath::data {

using Transform = std::function<Tensor(const Tensor&)>;

// (x - mean[c]) / std[c] for channel c (dim -3). One value applies to every channel. Float32 or
// float64 input (DTypeError otherwise); ValueError for a zero std; ShapeError for a tensor with
// fewer than 3 dims or a channel count that matches neither 1 nor mean.size().
class Normalize {
 public:
  Normalize(std::vector<double> mean, std::vector<double> std);
  Tensor operator()(const Tensor& x) const;

 private:
  std::vector<double> mean_, std_;
};

// A random size[0] x size[1] window of the image zero-padded by `padding` on every side
// (torchvision's RandomCrop with fill 0, pad_if_needed false): top in [0, H + 2p - h],
// left in [0, W + 2p - w]. ValueError when the window is larger than the padded image.
class RandomCrop {
 public:
  explicit RandomCrop(int64_t size, int64_t padding = 0) : RandomCrop(size, size, padding) {}
  RandomCrop(int64_t height, int64_t width, int64_t padding);
  Tensor operator()(const Tensor& x) const;

 private:
  int64_t height_, width_, padding_;
};

// Mirrors the last dim with probability p.
class RandomHorizontalFlip {
 public:
  explicit RandomHorizontalFlip(double p = 0.5);
  Tensor operator()(const Tensor& x) const;

 private:
  double p_;
};

// The transforms in order.
class Compose {
 public:
  explicit Compose(std::vector<Transform> transforms) : transforms_(std::move(transforms)) {}
  Tensor operator()(const Tensor& x) const {
    Tensor y = x;
    for (const auto& t : transforms_) y = t(y);
    return y;
  }

 private:
  std::vector<Transform> transforms_;
};

}  // namespace ath::data
