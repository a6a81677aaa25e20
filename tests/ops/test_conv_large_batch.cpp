// A large-batch float32 convolution runs as sub-batches (conv_dnnl.cpp bounds its staging
// buffers); every image's output must equal the same image convolved alone.
#include <athanor/athanor.h>
#include <athanor/ops/conv.h>
#include <gtest/gtest.h>

namespace ath {
namespace {

TEST(ConvLargeBatch, SubBatchesGiveEachImagesOwnResult) {
  manual_seed(5);
  // 256 KiB of output per image: the forward splits the 150 images into 64 + 64 + 22.
  Tensor x = randn({150, 4, 64, 64});
  Tensor w = randn({16, 4, 3, 3});
  Tensor b = randn({16});
  Tensor y = conv2d(x, w, b, {.padding = 1});
  for (int64_t i : {0, 63, 64, 127, 128, 149}) {
    Tensor alone = conv2d(x.slice(0, i, i + 1), w, b, {.padding = 1});
    const double err = max(abs(y.slice(0, i, i + 1) - alone)).item<double>();
    EXPECT_LT(err, 1e-4) << "image " << i;
  }
  // The whole batch against a float64 computation of one image from each chunk.
  Tensor y64 =
      conv2d(x.slice(0, 100, 101).to(kFloat64), w.to(kFloat64), b.to(kFloat64), {.padding = 1});
  EXPECT_LT(max(abs(y.slice(0, 100, 101).to(kFloat64) - y64)).item<double>(), 1e-4);
}

}  // namespace
}  // namespace ath
