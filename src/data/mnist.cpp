#include "athanor/data/mnist.h"

#include <filesystem>

#include "athanor/data/collate.h"
#include "athanor/io/idx.h"

namespace ath::data {
namespace {
// The .gz file if present, else the raw one; IOError listing both when neither exists.
std::string find_idx(const std::string& root, const std::string& stem, const std::string& kind) {
  const std::string gz = root + "/" + stem + ".gz", raw = root + "/" + stem;
  std::error_code ec;
  if (std::filesystem::exists(gz, ec)) return gz;
  if (std::filesystem::exists(raw, ec)) return raw;
  ATH_THROW(IOError,
            "{}: no file '{}' or '{}' (install the Debian package dataset-fashion-mnist for "
            "/usr/share/datasets/fashion-mnist, or point the root at a folder with the "
            "MNIST-format IDX files)",
            kind, gz, raw);
}

void scale_to_float(const uint8_t* src, float* dst, std::size_t n, float scale, float shift) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(src[i]) * scale - shift;
}
}  // namespace

MnistFolder::MnistFolder(MnistOptions options) : MnistFolder(std::move(options), "MnistFolder") {}

MnistFolder::MnistFolder(MnistOptions options, std::string kind)
    : options_(std::move(options)), kind_(std::move(kind)) {
  const std::string split = options_.train ? "train" : "t10k";
  const std::string image_path = find_idx(options_.root, split + "-images-idx3-ubyte", kind_);
  const std::string label_path = find_idx(options_.root, split + "-labels-idx1-ubyte", kind_);
  images_ = read_idx(image_path);
  Tensor labels = read_idx(label_path);
  ATH_CHECK(images_.dim() == 3, FormatError, "{}: '{}' has shape {}, expected [N, rows, cols]",
            kind_, image_path, images_.shape());
  ATH_CHECK(labels.dim() == 1, FormatError, "{}: '{}' has shape {}, expected [N]", kind_,
            label_path, labels.shape());
  ATH_CHECK(labels.size(0) == images_.size(0), FormatError,
            "{}: '{}' has {} images but '{}' has {} labels", kind_, image_path, images_.size(0),
            label_path, labels.size(0));
  ATH_CHECK(options_.std > 0.0, ValueError, "{}: std must be > 0, got {}", kind_, options_.std);
  scale_ = static_cast<float>(1.0 / (255.0 * options_.std));
  shift_ = static_cast<float>(options_.mean / options_.std);
  images_ = images_.contiguous();
  labels_ = labels.to(kInt64).contiguous();
}

std::string MnistFolder::name() const { return kind_ + (options_.train ? "(train)" : "(test)"); }

ImageSample MnistFolder::get(int64_t index) const {
  check_index(index, size(), name());
  const int64_t h = images_.size(1), w = images_.size(2);
  Tensor image = empty({1, h, w}, kFloat32);
  scale_to_float(images_.data<uint8_t>() + index * h * w, image.data<float>(),
                 static_cast<std::size_t>(h * w), scale_, shift_);
  if (options_.transform) image = options_.transform(image);
  return {image, labels_.data<int64_t>()[index]};
}

std::optional<Batch> MnistFolder::get_batch(std::span<const int64_t> indices) const {
  if (options_.transform) return std::nullopt;
  const int64_t h = images_.size(1), w = images_.size(2), n = size();
  const auto b = static_cast<int64_t>(indices.size());
  Tensor images = empty({b, 1, h, w}, kFloat32), labels = empty({b}, kInt64);
  const uint8_t* src = images_.data<uint8_t>();
  float* dst = images.data<float>();
  const int64_t* lab = labels_.data<int64_t>();
  int64_t* out_lab = labels.data<int64_t>();
  for (int64_t j = 0; j < b; ++j) {
    const int64_t i = indices[static_cast<std::size_t>(j)];
    check_index(i, n, name());
    scale_to_float(src + i * h * w, dst + j * h * w, static_cast<std::size_t>(h * w), scale_,
                   shift_);
    out_lab[j] = lab[i];
  }
  return Batch(TensorList{images, labels}, b);
}

}  // namespace ath::data
