// TextBytesDataset and CsvDataset, including their error messages.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <fstream>

#include "athanor/athanor.h"
#include "athanor/data/data.h"
#include "athanor/io/idx.h"
#include "athanor/io/safetensors.h"
#include "io/temp_dir.h"

namespace ath::data {
namespace {

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::vector<int64_t> codes(const std::string& s) { return {s.begin(), s.end()}; }

TEST(DataTextBytes, WindowsAndStride) {
  ath::testing::TempDir dir;
  write_text(dir.file("a.txt"), "hello ");
  write_text(dir.file("b.txt"), "world!");
  TextBytesDataset ds({.paths = {dir.file("a.txt"), dir.file("b.txt")}, .seq_len = 4});
  EXPECT_EQ(ds.size(), 2);  // 12 bytes: (12 - 5) / 4 + 1
  auto [x, y] = ds.get(1);
  EXPECT_EQ(x.dtype(), kInt64);
  EXPECT_EQ(x.to_vector<int64_t>(), codes("o wo"));
  EXPECT_EQ(y.to_vector<int64_t>(), codes(" wor"));
  EXPECT_THROW(ds.get(2), IndexError);
  TextBytesDataset dense(
      {.paths = {dir.file("a.txt"), dir.file("b.txt")}, .seq_len = 4, .stride = 1});
  EXPECT_EQ(dense.size(), 8);
  EXPECT_EQ(dense.get(7).second.to_vector<int64_t>(), codes("rld!"));
  std::vector<int64_t> ids = {7, 0};
  auto b = dense.get_batch(ids);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ((*b)[0].shape(), (Shape{2, 4}));
  EXPECT_EQ((*b)[1].select(0, 1).to_vector<int64_t>(), codes("ello"));
  EXPECT_EQ(TextBytesDataset(std::vector<uint8_t>{1, 2, 3}, 3).size(), 0);
  std::string msg = message_of([&] { TextBytesDataset({.paths = {dir.file("nope.txt")}}); });
  EXPECT_NE(msg.find("nope.txt"), std::string::npos) << msg;
  EXPECT_THROW(TextBytesDataset({.paths = {dir.file("nope.txt")}}), IOError);
  EXPECT_THROW(TextBytesDataset({.paths = {dir.file("a.txt")}, .seq_len = 0}), ValueError);
}

TEST(DataCsv, ParsesFeaturesAndTargets) {
  ath::testing::TempDir dir;
  write_text(dir.file("d.csv"), "x1, x2 ,label,x3\n1,2,0,3\n\n4.5,-5,2,6e1\r\n");
  CsvDataset ds({.path = dir.file("d.csv"), .target = "label"});
  EXPECT_EQ(ds.size(), 2);
  EXPECT_EQ(ds.feature_names(), (std::vector<std::string>{"x1", "x2", "x3"}));
  auto [x, y] = ds.get(1);
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{4.5f, -5.f, 60.f}));
  EXPECT_EQ(y.dtype(), kInt64);
  EXPECT_EQ(y.item<int64_t>(), 2);
  std::vector<int64_t> ids = {1, 0};
  EXPECT_EQ(ds.get_batch(ids)->operator[](1).to_vector<int64_t>(), (std::vector<int64_t>{2, 0}));
  CsvDataset reg({.path = dir.file("d.csv"),
                  .target = "x3",
                  .target_kind = CsvTarget::Float,
                  .features = {"x2"}});
  EXPECT_EQ(reg.get(0).first.to_vector<float>(), (std::vector<float>{2.f}));
  EXPECT_EQ(reg.get(1).second.dtype(), kFloat32);
  EXPECT_FLOAT_EQ(reg.get(1).second.item<float>(), 60.f);
  EXPECT_THROW(CsvDataset({.path = dir.file("d.csv"), .target = "y"}), KeyError);
  CsvDataset last({.path = dir.file("d.csv"), .target_kind = CsvTarget::Float});  // target: x3
  EXPECT_EQ(last.feature_names(), (std::vector<std::string>{"x1", "x2", "label"}));
  EXPECT_FLOAT_EQ(last.get(1).second.item<float>(), 60.f);
}

TEST(DataCsv, ErrorsNameFileLineAndColumn) {
  ath::testing::TempDir dir;
  write_text(dir.file("bad.csv"), "a,b,label\n1,2,0\n3,oops,1\n");
  std::string msg =
      message_of([&] { CsvDataset({.path = dir.file("bad.csv"), .target = "label"}); });
  EXPECT_NE(msg.find("bad.csv"), std::string::npos) << msg;
  EXPECT_NE(msg.find("line 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("column 2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("oops"), std::string::npos) << msg;
  EXPECT_THROW(CsvDataset({.path = dir.file("bad.csv"), .target = "label"}), FormatError);

  write_text(dir.file("short.csv"), "a,b,label\n1,2,0\n1,2\n");
  msg = message_of([&] { CsvDataset({.path = dir.file("short.csv"), .target = "label"}); });
  EXPECT_NE(msg.find("line 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("2 cells"), std::string::npos) << msg;

  write_text(dir.file("frac.csv"), "a,label\n1,0.5\n");
  EXPECT_THROW(CsvDataset({.path = dir.file("frac.csv"), .target = "label"}), FormatError);
  write_text(dir.file("empty.csv"), "");
  EXPECT_THROW(CsvDataset({.path = dir.file("empty.csv"), .target = "label"}), FormatError);
  EXPECT_THROW(CsvDataset({.path = dir.file("none.csv"), .target = "label"}), IOError);
}

// 1e300 or INT64_MAX as a class label overflowed the cast to int64 (a negative class index).
TEST(DataCsv, ClassLabelsOutOfRangeAreFormatErrors) {
  ath::testing::TempDir dir;
  for (const char* label : {"1e300", "9223372036854775807", "-3000000000", "2147483648"}) {
    write_text(dir.file("big.csv"), fmt::format("a,label\n1,0\n2,{}\n", label));
    const std::string msg =
        message_of([&] { CsvDataset({.path = dir.file("big.csv"), .target = "label"}); });
    EXPECT_NE(msg.find(fmt::format("line 3, column 2 ('label'): class label '{}' is out of range",
                                   label)),
              std::string::npos)
        << msg;
  }
  write_text(dir.file("ok.csv"), "a,label\n1,2147483647\n2,-100\n");
  CsvDataset ok({.path = dir.file("ok.csv"), .target = "label"});
  EXPECT_EQ(ok.get(0).second.item<int64_t>(), 2147483647);
  EXPECT_EQ(ok.get(1).second.item<int64_t>(), -100);
}

// A finite feature past float32's range would silently become inf (found by fuzz_csv).
TEST(DataCsv, FeaturesPastFloat32RangeAreFormatErrors) {
  ath::testing::TempDir dir;
  write_text(dir.file("big.csv"), "a,b,label\n1,2,0\n3,1e42,1\n");
  const std::string msg =
      message_of([&] { CsvDataset({.path = dir.file("big.csv"), .target = "label"}); });
  EXPECT_NE(msg.find("line 3, column 2 ('b'): '1e42' is out of float32's range"), std::string::npos)
      << msg;
  write_text(dir.file("inf.csv"), "a,label\ninf,0\nnan,1\n");  // written as such: kept
  CsvDataset ok({.path = dir.file("inf.csv"), .target = "label"});
  EXPECT_TRUE(std::isinf(ok.get(0).first[0].item<float>()));
}

// A FIFO blocked open() forever; directories and FIFOs are refused before opening.
TEST(DataFiles, FifosAndDirectoriesAreRefusedWithoutBlocking) {
  ath::testing::TempDir dir;
  const std::string fifo = dir.file("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string msg = message_of([&] { CsvDataset({.path = fifo, .target = "label"}); });
  EXPECT_NE(msg.find("'" + fifo + "': a FIFO (named pipe)"), std::string::npos) << msg;
  msg = message_of([&] { TextBytesDataset({.paths = {fifo}, .seq_len = 4}); });
  EXPECT_NE(msg.find("a FIFO"), std::string::npos) << msg;
  msg = message_of([&] { load_safetensors(fifo); });
  EXPECT_NE(msg.find("a FIFO"), std::string::npos) << msg;
  msg = message_of([&] { read_idx(fifo); });
  EXPECT_NE(msg.find("a FIFO"), std::string::npos) << msg;
  msg = message_of([&] { CsvDataset({.path = dir.path().string(), .target = "label"}); });
  EXPECT_NE(msg.find("a directory"), std::string::npos) << msg;
}

}  // namespace
}  // namespace ath::data
