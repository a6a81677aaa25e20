// MNIST-format datasets: tiny synthetic IDX files (raw and gzip), hostile files, missing files,
// and Debian's Fashion-MNIST when it is installed.
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>

#include "athanor/athanor.h"
#include "athanor/data/data.h"
#include "io/temp_dir.h"

namespace ath::data {
namespace {

std::vector<uint8_t> idx(uint8_t ndims, const std::vector<uint32_t>& dims,
                         const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out = {0, 0, 8, ndims};
  for (uint32_t d : dims) {
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(d >> s));
  }
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

void write_gz(const std::string& path, const std::vector<uint8_t>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}

// 3 images of 2x3: image i's pixel j is 10 * i + j; labels 4, 0, 9.
std::vector<uint8_t> pixels() {
  std::vector<uint8_t> p;
  for (uint8_t i = 0; i < 3; ++i) {
    for (uint8_t j = 0; j < 6; ++j) p.push_back(static_cast<uint8_t>(10 * i + j));
  }
  return p;
}

void write_split(const ath::testing::TempDir& dir, const std::string& split, bool gz) {
  auto images = idx(3, {3, 2, 3}, pixels());
  auto labels = idx(1, {3}, {4, 0, 9});
  if (gz) {
    write_gz(dir.file(split + "-images-idx3-ubyte.gz"), images);
    write_gz(dir.file(split + "-labels-idx1-ubyte.gz"), labels);
  } else {
    ath::testing::write_bytes(dir.file(split + "-images-idx3-ubyte"), images);
    ath::testing::write_bytes(dir.file(split + "-labels-idx1-ubyte"), labels);
  }
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(DataMnist, SyntheticFilesGzAndRaw) {
  ath::testing::TempDir dir;
  write_split(dir, "train", true);
  write_split(dir, "t10k", false);
  FashionMNIST train({.root = dir.path().string()});
  MnistFolder test({.root = dir.path().string(), .train = false});
  for (const MnistFolder* ds : std::vector<const MnistFolder*>{&train, &test}) {
    ASSERT_EQ(ds->size(), 3);
    auto [image, label] = ds->get(1);
    EXPECT_EQ(image.shape(), (Shape{1, 2, 3}));
    EXPECT_EQ(image.dtype(), kFloat32);
    EXPECT_FLOAT_EQ(image.to_vector<float>()[5], 15.0f / 255.0f);
    EXPECT_EQ(label, 0);
    std::vector<int64_t> ids = {2, 0};
    auto batch = ds->get_batch(ids);
    ASSERT_TRUE(batch.has_value());
    EXPECT_EQ((*batch)[0].shape(), (Shape{2, 1, 2, 3}));
    EXPECT_EQ((*batch)[1].to_vector<int64_t>(), (std::vector<int64_t>{9, 4}));
    std::vector<ImageSample> samples = {ds->get(2), ds->get(0)};
    Batch slow = default_collate(std::move(samples));
    EXPECT_EQ((*batch)[0].to_vector<float>(), slow[0].to_vector<float>());
  }
  EXPECT_EQ(train.name(), "FashionMNIST(train)");
  std::string msg = message_of([&] { train.get(3); });
  EXPECT_NE(msg.find("FashionMNIST(train)"), std::string::npos) << msg;
  EXPECT_THROW(train.get(3), IndexError);

  // Normalization is fused into the conversion and keeps the fast path.
  MnistFolder normalized({.root = dir.path().string(), .mean = 0.5, .std = 0.25});
  EXPECT_NEAR(normalized.get(1).first.to_vector<float>()[5], (15.0 / 255.0 - 0.5) / 0.25, 1e-6);
  EXPECT_EQ(normalized.get_batch(std::vector<int64_t>{1})->operator[](0).to_vector<float>(),
            normalized.get(1).first.to_vector<float>());
  EXPECT_THROW(MnistFolder({.root = dir.path().string(), .std = 0.0}), ValueError);

  // A transform applies in get() and turns the fast path off.
  MnistFolder flipped({.root = dir.path().string(), .transform = RandomHorizontalFlip(1.0)});
  EXPECT_FLOAT_EQ(flipped.get(0).first.to_vector<float>()[0], 2.0f / 255.0f);
  EXPECT_FALSE(flipped.get_batch(std::vector<int64_t>{0}).has_value());
}

TEST(DataMnist, MissingFilesNameThePathsAndThePackage) {
  ath::testing::TempDir dir;
  std::string msg = message_of([&] { FashionMNIST({.root = dir.path().string()}); });
  EXPECT_NE(msg.find(dir.file("train-images-idx3-ubyte.gz")), std::string::npos) << msg;
  EXPECT_NE(msg.find(dir.file("train-images-idx3-ubyte'")), std::string::npos) << msg;
  EXPECT_NE(msg.find("dataset-fashion-mnist"), std::string::npos) << msg;
  EXPECT_THROW(FashionMNIST({.root = dir.path().string()}), IOError);
}

TEST(DataMnist, MalformedFilesAreFormatErrors) {
  auto expect_format_error = [](const std::vector<uint8_t>& images,
                                const std::vector<uint8_t>& labels, const std::string& what) {
    ath::testing::TempDir dir;
    ath::testing::write_bytes(dir.file("train-images-idx3-ubyte"), images);
    ath::testing::write_bytes(dir.file("train-labels-idx1-ubyte"), labels);
    EXPECT_THROW(MnistFolder({.root = dir.path().string()}), FormatError) << what;
  };
  auto good_labels = idx(1, {3}, {4, 0, 9});
  auto bad_magic = idx(3, {3, 2, 3}, pixels());
  bad_magic[2] = 0x0D;  // float32 type: unsupported
  expect_format_error(bad_magic, good_labels, "bad type");
  auto bad_zero = idx(3, {3, 2, 3}, pixels());
  bad_zero[0] = 1;
  expect_format_error(bad_zero, good_labels, "bad magic");
  expect_format_error(idx(3, {4, 2, 3}, pixels()), good_labels, "dims disagree with the length");
  auto truncated = idx(3, {3, 2, 3}, pixels());
  // erase, not resize(size - 5): the latter trips a GCC 12 false -Wstringop-overflow under the
  // sanitizers.
  truncated.erase(truncated.end() - 5, truncated.end());
  expect_format_error(truncated, good_labels, "truncated");
  expect_format_error(idx(3, {3, 2, 3}, pixels()), idx(1, {2}, {4, 0}), "count mismatch");
  expect_format_error(idx(2, {3, 6}, pixels()), good_labels, "2-D images");
  expect_format_error({0, 0, 8}, good_labels, "short header");
}

TEST(DataMnist, DebianFashionMnist) {
  if (!std::filesystem::exists(std::string(kFashionMnistRoot) + "/train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }
  auto train = std::make_shared<FashionMNIST>();
  FashionMNIST test({.train = false});
  EXPECT_EQ(train->size(), 60000);
  EXPECT_EQ(test.size(), 10000);
  auto [image, label] = train->get(0);
  EXPECT_EQ(image.shape(), (Shape{1, 28, 28}));
  EXPECT_EQ(label, 9);  // the first training image is an ankle boot
  DataLoader loader(train, {.batch_size = 128, .shuffle = true, .num_workers = 2});
  EXPECT_EQ(loader.num_batches(), 469);
  loader.start_epoch(0);
  auto b = loader.next();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ((*b)[0].shape(), (Shape{128, 1, 28, 28}));
  EXPECT_EQ((*b)[1].dtype(), kInt64);
  double mean = (*b)[0].mean().item<double>();
  EXPECT_GT(mean, 0.2);
  EXPECT_LT(mean, 0.4);
}

}  // namespace
}  // namespace ath::data
