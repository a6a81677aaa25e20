// Image transforms. Memory contract: each reads its (contiguous) input once and writes a fresh
// contiguous output; no op dispatch, no temporaries beyond the output (they run per sample on
// loader threads, where a dozen small dispatched ops would cost more than the work).
#include "athanor/data/transforms.h"

#include <cstring>

#include "athanor/core/error.h"
#include "athanor/data/sample_generator.h"

namespace ath::data {
namespace {
template <class T>
void normalize_loop(const T* x, T* y, int64_t outer, int64_t channels, int64_t plane,
                    const std::vector<double>& mean, const std::vector<double>& std) {
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t c = 0; c < channels; ++c) {
      const auto ci = static_cast<std::size_t>(mean.size() == 1 ? 0 : c);
      const T m = static_cast<T>(mean[ci]), s = static_cast<T>(std[ci]);
      const int64_t base = (o * channels + c) * plane;
      for (int64_t i = 0; i < plane; ++i) y[base + i] = (x[base + i] - m) / s;
    }
  }
}

template <std::size_t N>
void flip_rows(const char* x, char* y, int64_t rows, int64_t width) {
  for (int64_t r = 0; r < rows; ++r) {
    const char* src = x + static_cast<std::size_t>(r * width) * N;
    char* dst = y + static_cast<std::size_t>(r * width) * N;
    for (int64_t i = 0; i < width; ++i) {
      std::memcpy(dst + static_cast<std::size_t>(i) * N,
                  src + static_cast<std::size_t>(width - 1 - i) * N, N);
    }
  }
}
}  // namespace

Normalize::Normalize(std::vector<double> mean, std::vector<double> std)
    : mean_(std::move(mean)), std_(std::move(std)) {
  ATH_CHECK(!mean_.empty() && mean_.size() == std_.size(), ValueError,
            "Normalize: mean and std need the same, non-zero number of values, got {} and {}",
            mean_.size(), std_.size());
  for (double s : std_) {
    ATH_CHECK(s != 0.0, ValueError, "Normalize: std contains a zero, which would divide by zero");
  }
}

Tensor Normalize::operator()(const Tensor& input) const {
  ATH_CHECK(input.dim() >= 3, ShapeError,
            "Normalize: expected a [..., C, H, W] tensor, got shape {}", input.shape());
  ATH_CHECK(input.dtype() == kFloat32 || input.dtype() == kFloat64, DTypeError,
            "Normalize: expected a float32 or float64 tensor, got {}", dtype_name(input.dtype()));
  const int64_t channels = input.size(-3), plane = input.size(-2) * input.size(-1);
  ATH_CHECK(mean_.size() == 1 || static_cast<int64_t>(mean_.size()) == channels, ShapeError,
            "Normalize: {} mean/std values for a tensor with {} channels (shape {})", mean_.size(),
            channels, input.shape());
  Tensor x = input.detach().contiguous();
  Tensor y = empty(x.shape(), x.dtype());
  const int64_t outer = channels * plane == 0 ? 0 : x.numel() / (channels * plane);
  if (x.dtype() == kFloat32) {
    normalize_loop(x.data<float>(), y.data<float>(), outer, channels, plane, mean_, std_);
  } else {
    normalize_loop(x.data<double>(), y.data<double>(), outer, channels, plane, mean_, std_);
  }
  return y;
}

RandomCrop::RandomCrop(int64_t height, int64_t width, int64_t padding)
    : height_(height), width_(width), padding_(padding) {
  ATH_CHECK(height > 0 && width > 0, ValueError, "RandomCrop: size must be positive, got {}x{}",
            height, width);
  ATH_CHECK(padding >= 0, ValueError, "RandomCrop: padding must be >= 0, got {}", padding);
}

Tensor RandomCrop::operator()(const Tensor& input) const {
  ATH_CHECK(input.dim() >= 2, ShapeError, "RandomCrop: expected a [..., H, W] tensor, got shape {}",
            input.shape());
  const int64_t H = input.size(-2), W = input.size(-1), p = padding_;
  ATH_CHECK(height_ <= H + 2 * p && width_ <= W + 2 * p, ValueError,
            "RandomCrop: crop {}x{} is larger than the padded image {}x{} (shape {}, padding {})",
            height_, width_, H + 2 * p, W + 2 * p, input.shape(), p);
  Generator& g = sample_generator();
  const int64_t top = uniform_int(g, H + 2 * p - height_ + 1);
  const int64_t left = uniform_int(g, W + 2 * p - width_ + 1);

  Tensor x = input.detach().contiguous();
  Shape out_shape = x.shape();
  out_shape[out_shape.size() - 2] = height_;
  out_shape[out_shape.size() - 1] = width_;
  Tensor y = empty(out_shape, x.dtype());
  const std::size_t es = x.element_size();
  const int64_t planes = H * W == 0 ? 0 : x.numel() / (H * W);
  const auto* src = static_cast<const char*>(x.data_ptr());
  auto* dst = static_cast<char*>(y.data_ptr());
  std::memset(dst, 0, y.nbytes());
  // Output column c reads source column c + left - p; the valid ones form one contiguous run.
  const int64_t c0 = std::max<int64_t>(0, p - left);
  const int64_t c1 = std::min<int64_t>(width_, W + p - left);
  for (int64_t pl = 0; pl < planes && c1 > c0; ++pl) {
    for (int64_t r = 0; r < height_; ++r) {
      const int64_t sr = r + top - p;
      if (sr < 0 || sr >= H) continue;
      std::memcpy(dst + static_cast<std::size_t>((pl * height_ + r) * width_ + c0) * es,
                  src + static_cast<std::size_t>((pl * H + sr) * W + c0 + left - p) * es,
                  static_cast<std::size_t>(c1 - c0) * es);
    }
  }
  return y;
}

RandomHorizontalFlip::RandomHorizontalFlip(double p) : p_(p) {
  ATH_CHECK(p >= 0.0 && p <= 1.0, ValueError, "RandomHorizontalFlip: p must be in [0, 1], got {}",
            p);
}

Tensor RandomHorizontalFlip::operator()(const Tensor& input) const {
  ATH_CHECK(input.dim() >= 1, ShapeError, "RandomHorizontalFlip: expected a [..., W] tensor");
  const bool flip = static_cast<double>(uniform_float(sample_generator())) < p_;
  Tensor x = input.detach().contiguous();
  Tensor y = empty(x.shape(), x.dtype());
  if (x.numel() == 0) return y;
  if (!flip) {
    std::memcpy(y.data_ptr(), x.data_ptr(), x.nbytes());
    return y;
  }
  const int64_t width = x.size(-1), rows = x.numel() / width;
  const auto* src = static_cast<const char*>(x.data_ptr());
  auto* dst = static_cast<char*>(y.data_ptr());
  switch (x.element_size()) {
    case 1:
      flip_rows<1>(src, dst, rows, width);
      break;
    case 2:
      flip_rows<2>(src, dst, rows, width);
      break;
    case 4:
      flip_rows<4>(src, dst, rows, width);
      break;
    default:
      flip_rows<8>(src, dst, rows, width);
      break;
  }
  return y;
}

}  // namespace ath::data
