// Image transforms against naive references; randomness from the sample generator.
#include <gtest/gtest.h>

#include "athanor/athanor.h"
#include "athanor/data/sample_generator.h"
#include "athanor/data/transforms.h"

namespace ath::data {
namespace {

TEST(DataTransforms, NormalizePerChannel) {
  Tensor x = arange(0, 8).to(kFloat32).view({2, 2, 2});  // C=2
  Tensor y = Normalize({1.0, 2.0}, {2.0, 4.0})(x);
  EXPECT_EQ(y.to_vector<float>(),
            (std::vector<float>{-0.5f, 0.f, 0.5f, 1.f, 0.5f, 0.75f, 1.f, 1.25f}));
  Tensor batch = x.unsqueeze(0).expand({3, 2, 2, 2}).to(kFloat64);  // NCHW, non-contiguous
  Tensor yb = Normalize({1.0, 2.0}, {2.0, 4.0})(batch);
  EXPECT_EQ(yb.dtype(), kFloat64);
  EXPECT_EQ(yb.select(0, 2).to_vector<float>(), y.to_vector<float>());
  EXPECT_EQ(Normalize({1.0}, {2.0})(x).to_vector<float>()[7], 3.0f);
  EXPECT_THROW(Normalize({0.0}, {0.0}), ValueError);
  EXPECT_THROW(Normalize({0.0, 1.0}, {1.0}), ValueError);
  EXPECT_THROW(Normalize({0, 0, 0}, {1, 1, 1})(x), ShapeError);
  EXPECT_THROW(Normalize({0.0}, {1.0})(x.to(kInt64)), DTypeError);
  EXPECT_THROW(Normalize({0.0}, {1.0})(zeros({2, 2})), ShapeError);
}

// Naive crop: pad with zeros, then take the window at (top, left).
std::vector<float> naive_crop(const Tensor& x, int64_t h, int64_t w, int64_t p, int64_t top,
                              int64_t left) {
  const int64_t C = x.size(0), H = x.size(1), W = x.size(2);
  auto v = x.to_vector<float>();
  std::vector<float> out;
  for (int64_t c = 0; c < C; ++c) {
    for (int64_t r = 0; r < h; ++r) {
      for (int64_t q = 0; q < w; ++q) {
        int64_t sr = r + top - p, sc = q + left - p;
        bool in = sr >= 0 && sr < H && sc >= 0 && sc < W;
        out.push_back(in ? v[static_cast<std::size_t>((c * H + sr) * W + sc)] : 0.f);
      }
    }
  }
  return out;
}

TEST(DataTransforms, RandomCropMatchesNaive) {
  Tensor x = rand({2, 5, 7}) + 1.0;
  for (int64_t pos = 0; pos < 20; ++pos) {
    int64_t top = 0, left = 0;
    {
      SampleGeneratorScope s(3, 0, pos);
      top = uniform_int(sample_generator(), 5 + 4 - 4 + 1);
      left = uniform_int(sample_generator(), 7 + 4 - 6 + 1);
    }
    SampleGeneratorScope s(3, 0, pos);
    Tensor y = RandomCrop(4, 6, 2)(x);
    EXPECT_EQ(y.shape(), (Shape{2, 4, 6}));
    EXPECT_EQ(y.to_vector<float>(), naive_crop(x, 4, 6, 2, top, left)) << pos;
  }
  EXPECT_EQ(RandomCrop(5, 7, 0)(x).to_vector<float>(), x.to_vector<float>());
  EXPECT_THROW(RandomCrop(6, 7, 0)(x), ValueError);
  EXPECT_THROW(RandomCrop(0), ValueError);
  EXPECT_THROW(RandomCrop(3)(zeros({4})), ShapeError);
}

TEST(DataTransforms, FlipAndCompose) {
  Tensor x = arange(0, 6).to(kFloat32).view({1, 2, 3});
  EXPECT_EQ(RandomHorizontalFlip(1.0)(x).to_vector<float>(),
            (std::vector<float>{2, 1, 0, 5, 4, 3}));
  EXPECT_EQ(RandomHorizontalFlip(0.0)(x).to_vector<float>(), x.to_vector<float>());
  Tensor u8 = arange(0, 4).to(kUInt8).view({2, 2});
  EXPECT_EQ(RandomHorizontalFlip(1.0)(u8).to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 3, 2}));
  EXPECT_THROW(RandomHorizontalFlip(1.5), ValueError);
  // p = 0.5 flips some samples and not others, reproducibly per sample generator.
  int flips = 0;
  for (int64_t pos = 0; pos < 64; ++pos) {
    SampleGeneratorScope s(0, 0, pos);
    Tensor y = RandomHorizontalFlip(0.5)(x);
    flips += y.to_vector<float>()[0] == 2.f;
  }
  EXPECT_GT(flips, 10);
  EXPECT_LT(flips, 54);
  Compose c({RandomHorizontalFlip(1.0), Normalize({1.0}, {2.0})});
  EXPECT_EQ(c(x).to_vector<float>(), (std::vector<float>{0.5f, 0.f, -0.5f, 2.f, 1.5f, 1.f}));
}

}  // namespace
}  // namespace ath::data
