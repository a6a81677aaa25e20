// MNIST-format image datasets: Fashion-MNIST, MNIST, or any folder holding the four IDX files
// ({train,t10k}-{images-idx3,labels-idx1}-ubyte, gzip-compressed (.gz) or raw).
//
//   data::FashionMNIST test({.train = false});   // Debian's files by default (t10k-*)
//   auto [image, label] = test.get(0);           // float32 [1, 28, 28] in [0, 1], int64
//   assert(test.size() == 10000 && image.shape() == Shape({1, 28, 28}) && label == 9);
//
// Another folder: `data::MNIST digits({.root = "/data/mnist", .train = false});`.
//
// Images are kept as uint8 (47 MB for 60000) and scaled by 1/255 per sample or per batch.
// Without a transform, get_batch builds {images [B, 1, 28, 28] float32, labels [B] int64} with
// one pass over the batch's pixels.
#pragma once

#include <string>
#include <utility>

#include "athanor/data/dataset.h"
#include "athanor/data/transforms.h"

namespace ath::data {

inline constexpr const char* kFashionMnistRoot = "/usr/share/datasets/fashion-mnist";

// Fashion-MNIST's training-set pixel mean and standard deviation (of values in [0, 1]).
inline constexpr double kFashionMnistMean = 0.2860, kFashionMnistStd = 0.3530;

struct MnistOptions {
  std::string root = kFashionMnistRoot;
  bool train = true;  // train-* files, else t10k-*
  // Pixels become (p / 255 - mean) / std, fused into the uint8 -> float conversion (computed as
  // p * (1 / (255 std)) - mean / std in float32), so normalized batches keep the fast path.
  double mean = 0.0, std = 1.0;
  Transform transform = {};  // applied to each image in get() (draws from sample_generator())
};

// (image, label) samples; the default collate makes TensorList{images, labels}.
using ImageSample = std::pair<Tensor, int64_t>;

class MnistFolder : public Dataset<ImageSample> {
 public:
  // IOError naming every path tried (and the Debian package dataset-fashion-mnist) when the
  // files are missing; FormatError (from read_idx, or here for images and labels that disagree)
  // for malformed files.
  explicit MnistFolder(MnistOptions options = {});

  int64_t size() const override { return labels_.size(0); }
  ImageSample get(int64_t index) const override;
  std::string name() const override;
  std::optional<Batch> get_batch(std::span<const int64_t> indices) const override;

  const Tensor& raw_images() const { return images_; }  // uint8 [N, H, W]
  const Tensor& labels() const { return labels_; }      // int64 [N]
  const MnistOptions& options() const { return options_; }

 protected:
  MnistFolder(MnistOptions options, std::string kind);

 private:
  MnistOptions options_;
  std::string kind_;
  Tensor images_, labels_;
  float scale_ = 1.0f / 255.0f, shift_ = 0.0f;
};

class FashionMNIST : public MnistFolder {
 public:
  explicit FashionMNIST(MnistOptions options = {})
      : MnistFolder(std::move(options), "FashionMNIST") {}
};

// The same format; no Debian package ships the digits, so pass .root.
class MNIST : public MnistFolder {
 public:
  explicit MNIST(MnistOptions options) : MnistFolder(std::move(options), "MNIST") {}
};

}  // namespace ath::data
