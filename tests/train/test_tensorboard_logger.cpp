// TensorBoardLogger and its TFRecord framing: CRC-32C against its standard check value, records
// read back with both CRCs checked, corrupt files named, and the Event protos decoded field by
// field (a small wire-format reader here, independent of the writer's helpers). What TensorBoard
// itself reads is checked outside CI by bench/interop/tensorboard_reads_athanor.py.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "athanor/core/error.h"
#include "athanor/io/tfrecord.h"
#include "athanor/train/tensorboard_logger.h"
#include "io/temp_dir.h"
#include "train/trainer_fixtures.h"

namespace ath::train {
namespace {

TEST(TFRecord, Crc32cCheckValueAndMask) {
  EXPECT_EQ(crc32c_of("123456789"), 0xe3069283u);
  EXPECT_EQ(crc32c_of(""), 0u);
  const uint32_t crc = crc32c_of("abc");
  EXPECT_EQ(masked_crc32c("abc"), ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
}

TEST(TFRecord, FramesRoundTripAndCorruptionIsNamed) {
  ath::testing::TempDir dir;
  const std::string path = dir.file("records");
  const std::string bytes = tfrecord("first") + tfrecord("") + tfrecord(std::string(300, 'x'));
  ath::testing::write_bytes(path, std::vector<uint8_t>(bytes.begin(), bytes.end()));
  EXPECT_EQ(read_tfrecords(path), (std::vector<std::string>{"first", "", std::string(300, 'x')}));
  auto fault_of = [&](std::string corrupt) {
    ath::testing::write_bytes(path, std::vector<uint8_t>(corrupt.begin(), corrupt.end()));
    try {
      (void)read_tfrecords(path);
    } catch (const FormatError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  std::string flipped = bytes;
  flipped[12] ^= 1;  // a payload byte of record 0
  EXPECT_EQ(fault_of(flipped), path + ": record 0 at byte 0: the payload's CRC does not match");
  flipped = bytes;
  flipped[21 + 1] ^= 1;  // the length of record 1 (record 0 is 12 + 5 + 4 bytes)
  EXPECT_EQ(fault_of(flipped), path + ": record 1 at byte 21: the length's CRC does not match");
  EXPECT_NE(fault_of(bytes.substr(0, bytes.size() - 1)).find("record 2 at byte 37: a 300-byte"),
            std::string::npos);
  EXPECT_NE(fault_of(bytes.substr(0, 5)).find("truncated in its 12-byte header"),
            std::string::npos);
  EXPECT_THROW(read_tfrecords(dir.file("missing")), IOError);
}

// A minimal protobuf reader: (field, wire type) -> raw value bytes, in order.
struct Field {
  int number, wire;
  uint64_t varint = 0;
  std::string bytes;  // fixed32/64 little-endian bytes, or the length-delimited payload
};
std::vector<Field> decode(std::string_view m) {
  std::vector<Field> out;
  std::size_t i = 0;
  auto varint = [&] {
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      const auto b = static_cast<uint8_t>(m.at(i++));
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
  };
  while (i < m.size()) {
    const uint64_t key = varint();
    Field f{static_cast<int>(key >> 3), static_cast<int>(key & 7)};
    if (f.wire == 0) f.varint = varint();
    if (f.wire == 1 || f.wire == 5) {
      f.bytes = std::string(m.substr(i, f.wire == 1 ? 8 : 4));
      i += f.bytes.size();
    }
    if (f.wire == 2) {
      const uint64_t n = varint();
      f.bytes = std::string(m.substr(i, n));
      i += n;
    }
    out.push_back(f);
  }
  return out;
}
double as_double(const Field& f) {
  uint64_t bits = 0;
  std::memcpy(&bits, f.bytes.data(), 8);
  return std::bit_cast<double>(bits);
}
float as_float(const Field& f) {
  uint32_t bits = 0;
  std::memcpy(&bits, f.bytes.data(), 4);
  return std::bit_cast<float>(bits);
}

TEST(TensorBoardLogger, WritesEventsTensorBoardReads) {
  ath::testing::TempDir dir;
  TensorBoardLogger tb(dir.path().string());
  EXPECT_EQ(tb.log_dir(), dir.file("lightning_logs/version_0"));
  EXPECT_EQ(
      std::filesystem::path(tb.events_file()).filename().string().rfind("events.out.tfevents.", 0),
      0u);
  tb.log_hyperparams({{"lr", 0.1}});
  tb.log_metrics({{"train_loss", 0.5}, {"epoch", 0}}, 49);
  tb.log_metrics({{"val_acc", 0.25}}, -1);  // a negative step is a ten-byte varint
  tb.save();
  const std::vector<std::string> events = read_tfrecords(tb.events_file());
  ASSERT_EQ(events.size(), 3u);
  // The first event names the file version.
  std::vector<Field> first = decode(events[0]);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].number, 1);
  EXPECT_GT(as_double(first[0]), 1.7e9);  // wall time, seconds since the epoch
  EXPECT_EQ(first[1].number, 3);
  EXPECT_EQ(first[1].bytes, "brain.Event:2");
  // Then wall_time, step and a Summary with one Value{tag, simple_value} per metric, in key order.
  std::vector<Field> e = decode(events[1]);
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[1].number, 2);
  EXPECT_EQ(e[1].varint, 49u);
  EXPECT_EQ(e[2].number, 5);
  std::vector<Field> values = decode(e[2].bytes);
  ASSERT_EQ(values.size(), 2u);
  std::vector<std::pair<std::string, float>> scalars;
  for (const Field& v : values) {
    EXPECT_EQ(v.number, 1);
    std::vector<Field> tv = decode(v.bytes);
    ASSERT_EQ(tv.size(), 2u);
    EXPECT_EQ(tv[0].number, 1);
    EXPECT_EQ(tv[1].number, 2);
    EXPECT_EQ(tv[1].wire, 5);
    scalars.emplace_back(tv[0].bytes, as_float(tv[1]));
  }
  EXPECT_EQ(scalars,
            (std::vector<std::pair<std::string, float>>{{"epoch", 0.0f}, {"train_loss", 0.5f}}));
  EXPECT_EQ(static_cast<int64_t>(decode(events[2])[1].varint), -1);
  EXPECT_TRUE(std::filesystem::exists(tb.log_dir() + "/hparams.yaml"));
  // Nothing is appended until save().
  tb.log_metrics({{"x", 1}}, 50);
  EXPECT_EQ(read_tfrecords(tb.events_file()).size(), 3u);
  tb.finalize("success");
  EXPECT_EQ(read_tfrecords(tb.events_file()).size(), 4u);
}

// The Trainer's default loggers put the events file beside metrics.csv, with the same rows.
TEST(TensorBoardLogger, IsADefaultLoggerBesideTheCsv) {
  ath::testing::TempDir dir;
  TrainerOptions o = train::testing::quiet_options();
  o.logger = true;
  o.default_root_dir = dir.path().string();
  o.max_epochs = 1;
  o.log_every_n_steps = 1;
  Trainer t(o);
  train::testing::Regressor m;
  t.fit(m, train::testing::regression_source(3), train::testing::regression_source(2, false, 9));
  const std::string version_dir = dir.file("lightning_logs/version_0");
  std::string events;
  for (const auto& entry : std::filesystem::directory_iterator(version_dir)) {
    if (entry.path().filename().string().rfind("events.out.tfevents.", 0) == 0) {
      events = entry.path().string();
    }
  }
  ASSERT_FALSE(events.empty());
  std::vector<int64_t> steps;
  for (const std::string& e : read_tfrecords(events)) {
    for (const Field& f : decode(e)) {
      if (f.number == 2) steps.push_back(static_cast<int64_t>(f.varint));
    }
  }
  // Three step rows, then the validation row (Lightning's steps), as in metrics.csv.
  EXPECT_EQ(steps, (std::vector<int64_t>{0, 1, 2, 2}));
  std::ifstream csv(version_dir + "/metrics.csv");
  std::string line;
  std::getline(csv, line);
  EXPECT_EQ(line.rfind("epoch,step,", 0), 0u) << line;  // sorted keys: step is the second field
  std::vector<int64_t> csv_steps;
  while (std::getline(csv, line)) csv_steps.push_back(std::stoll(line.substr(line.find(',') + 1)));
  EXPECT_EQ(csv_steps, steps);
}

}  // namespace
}  // namespace ath::train
