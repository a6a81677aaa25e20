// IDX (MNIST format) reader: Fashion-MNIST as Debian ships it, and hostile files.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>

#include "athanor/athanor.h"
#include "athanor/io/idx.h"
#include "io/temp_dir.h"

namespace ath {
namespace {

const std::string kDir = "/usr/share/datasets/fashion-mnist/";

std::vector<uint8_t> idx_header(uint8_t type, const std::vector<uint32_t>& dims) {
  std::vector<uint8_t> out = {0, 0, type, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims) {
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(d >> s));
  }
  return out;
}

void write_gz(const std::string& path, const std::vector<uint8_t>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}

std::string format_error(const std::string& path) {
  try {
    (void)read_idx(path);
  } catch (const FormatError& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.rfind(path + ": ", 0), 0u) << msg;
    return msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a FormatError: " << e.what();
    return "";
  }
  ADD_FAILURE() << "accepted " << path;
  return "";
}

TEST(Idx, FashionMnistTrainingSet) {
  if (!std::filesystem::exists(kDir)) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  Tensor images = read_idx(kDir + "train-images-idx3-ubyte.gz");
  Tensor labels = read_idx(kDir + "train-labels-idx1-ubyte.gz");
  EXPECT_EQ(images.dtype(), kUInt8);
  EXPECT_EQ(images.shape(), (Shape{60000, 28, 28}));
  EXPECT_EQ(labels.shape(), (Shape{60000}));
  // Values read with Python's gzip module.
  const uint8_t* px = images.data<uint8_t>();
  EXPECT_EQ(px[10 * 28 + 13], 193);  // image 0, row 10, col 13
  EXPECT_EQ(px[10 * 28 + 14], 228);
  uint64_t first = 0, all = 0;
  for (int i = 0; i < 784; ++i) first += px[i];
  for (int64_t i = 0; i < images.numel(); ++i) all += px[i];
  EXPECT_EQ(first, 76247u);
  EXPECT_EQ(all, 3431114169u);
  const uint8_t* lb = labels.data<uint8_t>();
  EXPECT_EQ(std::vector<uint8_t>(lb, lb + 10),
            (std::vector<uint8_t>{9, 0, 0, 3, 0, 2, 7, 2, 5, 5}));
  EXPECT_EQ(lb[59999], 5);
  std::vector<int> counts(10, 0);
  for (int i = 0; i < 60000; ++i) counts.at(lb[i])++;
  EXPECT_EQ(counts, std::vector<int>(10, 6000));
}

TEST(Idx, FashionMnistTestSet) {
  if (!std::filesystem::exists(kDir)) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  Tensor images = read_idx(kDir + "t10k-images-idx3-ubyte.gz");
  Tensor labels = read_idx(kDir + "t10k-labels-idx1-ubyte.gz");
  EXPECT_EQ(images.shape(), (Shape{10000, 28, 28}));
  EXPECT_EQ(labels.shape(), (Shape{10000}));
  const uint8_t* px = images.data<uint8_t>();
  EXPECT_EQ(px[9999 * 784 + 14 * 28 + 14], 132);
  uint64_t all = 0;
  for (int64_t i = 0; i < images.numel(); ++i) all += px[i];
  EXPECT_EQ(all, 573469082u);
  const uint8_t* lb = labels.data<uint8_t>();
  EXPECT_EQ(std::vector<uint8_t>(lb, lb + 10),
            (std::vector<uint8_t>{9, 2, 1, 1, 6, 1, 4, 6, 5, 7}));
}

TEST(Idx, RawAndGzippedFilesReadTheSame) {
  testing::TempDir dir;
  std::vector<uint8_t> bytes = idx_header(0x08, {2, 3, 2});
  for (int i = 0; i < 12; ++i) bytes.push_back(static_cast<uint8_t>(i * 20));
  testing::write_bytes(dir.file("raw.idx"), bytes);
  write_gz(dir.file("packed.idx.gz"), bytes);
  for (const char* name : {"raw.idx", "packed.idx.gz"}) {
    Tensor t = read_idx(dir.file(name));
    EXPECT_EQ(t.shape(), (Shape{2, 3, 2})) << name;
    EXPECT_EQ(t.to_vector<int>()[11], 220) << name;
  }
  // A dim of 0: an empty tensor of that shape.
  testing::write_bytes(dir.file("empty.idx"), idx_header(0x08, {0, 28, 28}));
  EXPECT_EQ(read_idx(dir.file("empty.idx")).shape(), (Shape{0, 28, 28}));
}

TEST(Idx, MissingFileIsAnIOErrorNamingThePath) {
  testing::TempDir dir;
  const std::string path = dir.file("nope-idx1-ubyte.gz");
  try {
    (void)read_idx(path);
    FAIL();
  } catch (const IOError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(std::strerror(ENOENT)), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)read_idx(dir.path().string()), IOError);
}

TEST(Idx, BadMagic) {
  testing::TempDir dir;
  std::vector<uint8_t> f = {0x1f, 0x00, 0x08, 0x01, 0, 0, 0, 1, 7};
  testing::write_bytes(dir.file("a"), f);
  EXPECT_NE(format_error(dir.file("a")).find("bad magic 0x1f000801"), std::string::npos);
  testing::write_bytes(dir.file("b"), {0, 0, 8, 0});  // zero dims
  EXPECT_NE(format_error(dir.file("b")).find("bad magic"), std::string::npos);
  testing::write_bytes(dir.file("c"), {'h', 'e', 'l', 'l', 'o'});
  EXPECT_NE(format_error(dir.file("c")).find("bad magic"), std::string::npos);
  // A real IDX type athanor does not read: float32 (0x0D).
  std::vector<uint8_t> floats = idx_header(0x0D, {1});
  floats.insert(floats.end(), {0, 0, 0, 0});
  testing::write_bytes(dir.file("d"), floats);
  EXPECT_NE(format_error(dir.file("d")).find("element type 0x0d"), std::string::npos);
}

TEST(Idx, Truncation) {
  testing::TempDir dir;
  testing::write_bytes(dir.file("magic"), {0, 0});
  EXPECT_NE(format_error(dir.file("magic")).find("inside the 4-byte IDX magic"), std::string::npos);
  std::vector<uint8_t> dims = idx_header(0x08, {2, 2});
  dims.resize(9);
  testing::write_bytes(dir.file("dims"), dims);
  EXPECT_NE(format_error(dir.file("dims")).find("inside the 2 dims"), std::string::npos);
  // A gzip stream cut short.
  std::vector<uint8_t> body = idx_header(0x08, {100, 100});
  body.resize(body.size() + 10000, 3);
  write_gz(dir.file("whole.gz"), body);
  std::vector<uint8_t> gz = testing::read_bytes(dir.file("whole.gz"));
  gz.resize(gz.size() / 2);
  testing::write_bytes(dir.file("cut.gz"), gz);
  std::string msg = format_error(dir.file("cut.gz"));
  EXPECT_TRUE(msg.find("truncated") != std::string::npos || msg.find("gzip") != std::string::npos)
      << msg;
}

TEST(Idx, DimsThatDisagreeWithTheDataLength) {
  testing::TempDir dir;
  std::vector<uint8_t> short_data = idx_header(0x08, {3, 4});
  short_data.resize(short_data.size() + 11);
  testing::write_bytes(dir.file("short"), short_data);
  EXPECT_NE(format_error(dir.file("short")).find("need 12 bytes of data, the file has 11"),
            std::string::npos);
  std::vector<uint8_t> long_data = idx_header(0x08, {3, 4});
  long_data.resize(long_data.size() + 13);
  write_gz(dir.file("long.gz"), long_data);
  EXPECT_NE(format_error(dir.file("long.gz")).find("data continues past the 12 bytes"),
            std::string::npos);
  // Huge dims with no data behind them fail on the data, without allocating what they claim.
  testing::write_bytes(dir.file("huge"), idx_header(0x08, {0xffffffffu, 0xffffu}));
  EXPECT_NE(format_error(dir.file("huge")).find("the file has 0"), std::string::npos);
}

TEST(Idx, DimsProductOverflow) {
  testing::TempDir dir;
  testing::write_bytes(dir.file("o"), idx_header(0x08, {0xffffffffu, 0xffffffffu, 0xffffffffu}));
  EXPECT_NE(format_error(dir.file("o")).find("overflow"), std::string::npos);
  // A zero dim does not excuse the others: their product must still fit (found by fuzz_idx).
  testing::write_bytes(dir.file("zero"),
                       idx_header(0x08, {0, 0xffffffffu, 0xffffffffu, 0xffffffffu}));
  EXPECT_NE(format_error(dir.file("zero")).find("overflow"), std::string::npos);
  testing::write_bytes(dir.file("rank"), idx_header(0x08, std::vector<uint32_t>(13, 1)));
  EXPECT_NE(format_error(dir.file("rank")).find("13 dims"), std::string::npos);
}

TEST(Idx, CorruptGzipData) {
  testing::TempDir dir;
  std::vector<uint8_t> body = idx_header(0x08, {64});
  body.resize(body.size() + 64, 9);
  write_gz(dir.file("ok.gz"), body);
  std::vector<uint8_t> gz = testing::read_bytes(dir.file("ok.gz"));
  for (std::size_t i = 12; i < gz.size() - 8; ++i) gz[i] ^= 0x5a;  // scramble the deflate stream
  testing::write_bytes(dir.file("bad.gz"), gz);
  (void)format_error(dir.file("bad.gz"));
}

}  // namespace
}  // namespace ath
