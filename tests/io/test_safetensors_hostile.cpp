// Hostile safetensors files: one test per fault. Each must be a FormatError naming the source
// ("<buffer>" or the path) and the fault, for the in-memory parser and the memory-mapped reader
// alike; nothing may crash or read out of bounds (the sanitizer build runs these).
#include <gtest/gtest.h>

#include <cstring>

#include "athanor/athanor.h"
#include "athanor/io/safetensors.h"
#include "io/temp_dir.h"

namespace ath {
namespace {

std::vector<uint8_t> le64(uint64_t n) {
  std::vector<uint8_t> out(8);
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<uint8_t>(n >> (8 * i));
  return out;
}

// A file with the given header text (padded with spaces to 8 bytes) and `buffer_bytes` bytes.
// (Built with push_back: GCC 12 at -O3 reports false array-bounds/restrict warnings for the
// equivalent insert/append calls.)
std::vector<uint8_t> file_with(std::string header, std::size_t buffer_bytes = 0) {
  while (header.size() % 8 != 0) header.push_back(' ');
  std::vector<uint8_t> out = le64(header.size());
  for (char c : header) out.push_back(static_cast<uint8_t>(c));
  for (std::size_t i = 0; i < buffer_bytes; ++i) out.push_back(static_cast<uint8_t>(i));
  return out;
}

void expect_bad(const std::vector<uint8_t>& bytes, const std::string& fault) {
  SCOPED_TRACE("expected fault: " + fault);
  try {
    (void)parse_safetensors(bytes);
    ADD_FAILURE() << "parse_safetensors accepted the buffer";
  } catch (const FormatError& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.rfind("<buffer>: ", 0), 0u) << msg;
    EXPECT_NE(msg.find(fault), std::string::npos) << msg;
  }
  testing::TempDir dir;
  const std::string path = dir.file("hostile.safetensors");
  testing::write_bytes(path, bytes);
  try {
    (void)load_safetensors(path);
    ADD_FAILURE() << "load_safetensors accepted the file";
  } catch (const FormatError& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.rfind(path + ": ", 0), 0u) << msg;
    EXPECT_NE(msg.find(fault), std::string::npos) << msg;
  }
}

std::string entry(const std::string& name, const std::string& dtype, const std::string& shape,
                  const std::string& offsets) {
  return fmt::format(R"("{}":{{"dtype":{},"shape":{},"data_offsets":{}}})", name, dtype, shape,
                     offsets);
}
std::string one(const std::string& dtype, const std::string& shape, const std::string& offsets) {
  return fmt::format("{{{}}}", entry("t", dtype, shape, offsets));
}
// A header with two entries. (fmt rather than "{" + ...: GCC 12 at -O3 warns falsely on that.)
std::string two(const std::string& a, const std::string& b) {
  return fmt::format("{{{},{}}}", a, b);
}

TEST(SafetensorsHostile, TooShortForTheLengthPrefix) {
  expect_bad({}, "too short for the 8-byte header length");
  expect_bad({1, 0, 0}, "too short for the 8-byte header length");
}

TEST(SafetensorsHostile, HeaderLengthOverTheLimit) {
  expect_bad(le64(100'000'001), "exceeds the 100000000-byte limit");
  expect_bad(le64(~uint64_t{0}), "exceeds the 100000000-byte limit");
}

TEST(SafetensorsHostile, HeaderLengthPastTheEndOfTheFile) {
  std::vector<uint8_t> f = le64(64);
  f.push_back('{');
  expect_bad(f, "runs past the end");
}

TEST(SafetensorsHostile, TruncatedFile) {
  StateDict sd;
  sd.insert("w", ones({16}));
  std::vector<uint8_t> good = serialize_safetensors(sd);
  for (std::size_t cut : {good.size() - 1, good.size() - 60, std::size_t{20}}) {
    std::vector<uint8_t> f(good.begin(), good.begin() + static_cast<long>(cut));
    try {
      (void)parse_safetensors(f);
      ADD_FAILURE() << "accepted a file cut at " << cut;
    } catch (const FormatError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("<buffer>: ", 0), 0u) << e.what();
    }
  }
  expect_bad(std::vector<uint8_t>(good.begin(), good.end() - 4), "end past the buffer");
}

TEST(SafetensorsHostile, NotJson) {
  expect_bad(file_with("{\"t\": "), "header is not valid JSON");
  expect_bad(file_with("{} trailing"), "header is not valid JSON");
  expect_bad(file_with(std::string("{\0}", 3)), "header is not valid JSON");
  expect_bad(file_with(R"({"t":1e400})"), "header is not valid JSON");
}

TEST(SafetensorsHostile, InvalidUtf8InTheHeader) {
  expect_bad(file_with("{\"t\xff\":{}}"), "header is not valid JSON");
  expect_bad(file_with("{\"__metadata__\":{\"k\":\"\xc3\"}}"), "header is not valid JSON");
}

TEST(SafetensorsHostile, HeaderNotAnObject) {
  expect_bad(file_with("[]"), "header is not a JSON object");
  expect_bad(file_with("\"text\""), "header is not a JSON object");
}

TEST(SafetensorsHostile, EntryNotAnObject) {
  expect_bad(file_with(R"({"t":5})"), "tensor \"t\": entry is not a JSON object");
  expect_bad(file_with(R"({"t":[1,2]})"), "tensor \"t\": entry is not a JSON object");
}

TEST(SafetensorsHostile, MissingField) {
  expect_bad(file_with(R"({"t":{"dtype":"F32","data_offsets":[0,0]}})"), "missing \"shape\"");
  expect_bad(file_with(R"({"t":{"shape":[],"data_offsets":[0,4]}})"), "missing \"dtype\"");
  expect_bad(file_with(R"({"t":{"dtype":"F32","shape":[]}})"), "missing \"data_offsets\"");
}

TEST(SafetensorsHostile, ExtraField) {
  expect_bad(file_with(R"({"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":0}})", 1),
             "unexpected field \"x\"");
}

TEST(SafetensorsHostile, WrongFieldTypes) {
  expect_bad(file_with(one("1", "[1]", "[0,1]"), 1), "\"dtype\" is not a string");
  expect_bad(file_with(one("\"U8\"", "1", "[0,1]"), 1), "\"shape\" is not an array");
  expect_bad(file_with(one("\"U8\"", "{}", "[0,1]"), 1), "\"shape\" is not an array");
  expect_bad(file_with(one("\"U8\"", "[1]", "\"0,1\""), 1), "is not two non-negative integers");
}

TEST(SafetensorsHostile, UnsupportedDtypesAreNamed) {
  for (std::string d : {"I8", "U16", "I16", "U32", "U64", "F8_E4M3", "F8_E5M2"}) {
    expect_bad(file_with(one("\"" + d + "\"", "[0]", "[0,0]")), "dtype " + d + " is not supported");
  }
  expect_bad(file_with(one("\"F33\"", "[0]", "[0,0]")), "unknown dtype \"F33\"");
  expect_bad(file_with(one("\"f32\"", "[0]", "[0,0]")), "unknown dtype \"f32\"");
}

TEST(SafetensorsHostile, NegativeOrNonIntegerShapeEntries) {
  expect_bad(file_with(one("\"U8\"", "[-1]", "[0,0]")), "shape entry 0 (-1) is not a non-negative");
  expect_bad(file_with(one("\"U8\"", "[1,1.5]", "[0,1]"), 1), "shape entry 1 (1.5)");
  expect_bad(file_with(one("\"U8\"", "[1.0]", "[0,1]"), 1), "shape entry 0 (1.0)");
  expect_bad(file_with(one("\"U8\"", "[\"2\"]", "[0,2]"), 2), "shape entry 0");
  expect_bad(file_with(one("\"U8\"", "[true]", "[0,1]"), 1), "shape entry 0");
  expect_bad(file_with(one("\"U8\"", "[9223372036854775808]", "[0,0]")), "shape entry 0");
}

TEST(SafetensorsHostile, ShapeProductOverflow) {
  expect_bad(file_with(one("\"U8\"", "[4294967296,4294967296]", "[0,0]")), "overflows");
  // Overflow before a later zero still counts, as in the reference.
  expect_bad(file_with(one("\"U8\"", "[4294967296,4294967296,0]", "[0,0]")), "overflows");
  // And a zero first does not hide it (found by fuzz_safetensors: the strides overflowed).
  expect_bad(file_with(one("\"U8\"", "[0,4294967296,4294967296]", "[0,0]")), "overflows");
  // numel fits in u64 but numel * itemsize does not fit athanor's int64 byte counts.
  expect_bad(file_with(one("\"F64\"", "[2305843009213693952]", "[0,0]")), "overflows");
}

TEST(SafetensorsHostile, TooManyDims) {
  expect_bad(file_with(one("\"U8\"", "[1,1,1,1,1,1,1,1,1,1,1,1,1]", "[0,1]"), 1),
             "13 dims, more than athanor's limit of 12");
}

TEST(SafetensorsHostile, ArraysLongerThanAnyShapeStopTheParse) {
  std::string zeros = "[0";
  for (int i = 0; i < 100000; ++i) zeros += ",0";
  zeros += "]";
  expect_bad(file_with(one("\"U8\"", zeros, "[0,0]")), "an array of more than 64 elements");
  expect_bad(file_with(zeros), "header is not a JSON object");  // refused at its first byte
}

TEST(SafetensorsHostile, DataOffsetsNotTwoIntegers) {
  const char* bad[] = {"[0]",    "[0,1,1]", "[]",        "[\"0\",1]", "[0.0,1]",
                       "[-1,0]", "[0,1.5]", "{\"a\":0}", "null"};
  for (const char* offsets : bad) {
    expect_bad(file_with(one("\"U8\"", "[1]", offsets), 1), "is not two non-negative integers");
  }
  // An integer past 64 bits is refused by the JSON parser itself.
  expect_bad(file_with(one("\"U8\"", "[1]", "[0,18446744073709551616]"), 1), "not valid JSON");
}

TEST(SafetensorsHostile, BeginAfterEnd) {
  expect_bad(file_with(one("\"U8\"", "[1]", "[2,1]"), 2), "data_offsets [2, 1] begin after end");
}

TEST(SafetensorsHostile, EndPastTheBuffer) {
  expect_bad(file_with(one("\"U8\"", "[4]", "[0,4]"), 3),
             "data_offsets [0, 4] end past the buffer (3 bytes)");
  expect_bad(file_with(one("\"U8\"", "[0]", "[18446744073709551615,18446744073709551615]")),
             "end past the buffer");
}

TEST(SafetensorsHostile, ByteCountDisagreesWithShapeAndDtype) {
  expect_bad(file_with(one("\"F32\"", "[2]", "[0,7]"), 7),
             "hold 7 bytes, but F32 of shape [2] need 8");
  expect_bad(file_with(one("\"F32\"", "[]", "[0,0]")), "hold 0 bytes, but F32 of shape [] need 4");
}

TEST(SafetensorsHostile, OverlappingRanges) {
  std::string h = two(entry("a", "\"U8\"", "[4]", "[0,4]"), entry("b", "\"U8\"", "[4]", "[2,6]"));
  expect_bad(file_with(h, 6), "tensor \"b\": data_offsets [2, 6] overlap tensor \"a\" [0, 4]");
  // Two tensors on the same bytes: overlap, even though each alone is fine.
  h = two(entry("a", "\"U8\"", "[4]", "[0,4]"), entry("b", "\"U8\"", "[4]", "[0,4]"));
  expect_bad(file_with(h, 4), "overlap");
}

TEST(SafetensorsHostile, HolesInTheBuffer) {
  std::string h = two(entry("a", "\"U8\"", "[2]", "[0,2]"), entry("b", "\"U8\"", "[2]", "[4,6]"));
  expect_bad(file_with(h, 6), "leave bytes [2, 4) of the buffer unused");
  expect_bad(file_with(one("\"U8\"", "[2]", "[2,4]"), 4), "leave bytes [0, 2)");
}

TEST(SafetensorsHostile, TrailingBytesAfterTheLastTensor) {
  expect_bad(file_with(one("\"U8\"", "[2]", "[0,2]"), 5), "the file has 3 trailing bytes");
  expect_bad(file_with("{}", 1), "the file has 1 trailing bytes");
}

TEST(SafetensorsHostile, DuplicateKeys) {
  std::string h = two(entry("a", "\"U8\"", "[1]", "[0,1]"), entry("a", "\"U8\"", "[1]", "[1,2]"));
  expect_bad(file_with(h, 2), "duplicate key \"a\"");
  expect_bad(file_with(R"({"t":{"dtype":"U8","dtype":"U8","shape":[1],"data_offsets":[0,1]}})", 1),
             "duplicate key \"dtype\"");
  expect_bad(file_with(R"({"__metadata__":{"k":"1","k":"2"}})"), "duplicate key \"k\"");
  expect_bad(file_with(R"({"__metadata__":{},"__metadata__":{}})"),
             "duplicate key \"__metadata__\"");
}

TEST(SafetensorsHostile, MetadataNotAStringMap) {
  expect_bad(file_with(R"({"__metadata__":[]})"), "\"__metadata__\" is not a JSON object");
  expect_bad(file_with(R"({"__metadata__":"x"})"), "\"__metadata__\" is not a JSON object");
  expect_bad(file_with(R"({"__metadata__":null})"), "\"__metadata__\" is not a JSON object");
  expect_bad(file_with(R"({"__metadata__":{"k":1}})"), "value for \"k\" is not a string");
  expect_bad(file_with(R"({"__metadata__":{"k":["v"]}})"), "value for \"k\" is not a string");
}

// PyTorch's own checkpoint formats (a Lightning .ckpt) are named as such, with the way out.
TEST(SafetensorsHostile, PyTorchCheckpointsAreRecognized) {
  const std::string zip = std::string("PK\x03\x04\x14\x00\x00\x00", 8) + "archive/data.pkl";
  const std::string pickle = std::string("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46", 8) + "legacy";
  for (const std::string& bytes : {zip, pickle}) {
    try {
      parse_safetensors(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()),
                        "epoch=2-step=1407.ckpt");
      ADD_FAILURE() << "parsed a PyTorch checkpoint";
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find("epoch=2-step=1407.ckpt: this is a PyTorch checkpoint"),
                std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("tools/lightning_ckpt_to_athanor.py"),
                std::string::npos);
    }
  }
}

TEST(SafetensorsHostile, NestingDeeperThanAHeader) {
  expect_bad(file_with(R"({"t":{"shape":[[1]]}})"), "nested deeper");
  // Deep nesting is rejected at the first level too deep, without recursing into it (the JSON
  // parser is iterative); unbalanced, it is not JSON at all.
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  expect_bad(file_with("{\"t\":{\"shape\":" + deep + "}}"), "nested deeper");
  expect_bad(file_with("{\"t\":{\"shape\":" + std::string(100000, '[')), "not valid JSON");
}

TEST(SafetensorsHostile, BoolBytesOtherThanZeroOrOne) {
  std::vector<uint8_t> f = file_with(one("\"BOOL\"", "[3]", "[0,3]"));
  for (uint8_t b : {1, 0, 2}) f.push_back(b);
  expect_bad(f, "BOOL element 2 has byte value 2");
}

TEST(SafetensorsHostile, LongOrControlCharacterNamesAreQuotedAndCut) {
  std::string name(1000, 'n');
  name += "\\u0001";
  try {
    (void)parse_safetensors(file_with(fmt::format("{{\"{}\":5}}", name)));
    FAIL();
  } catch (const FormatError& e) {
    std::string msg = e.what();
    EXPECT_LT(msg.size(), 400u) << msg;
    EXPECT_NE(msg.find("...: entry is not a JSON object"), std::string::npos) << msg;
  }
}

TEST(SafetensorsHostile, ValidEdgeCasesAreAccepted) {
  // Zero-size tensors may share an offset; a header may be unpadded; "-0" is an integer.
  std::string h =
      fmt::format("{{{},{},{}}}", entry("a", "\"F32\"", "[0]", "[0,0]"),
                  entry("b", "\"F32\"", "[0,5]", "[0,0]"), entry("c", "\"U8\"", "[-0]", "[0,0]"));
  SafetensorsData d = parse_safetensors(file_with(h));
  EXPECT_EQ(d.tensors.size(), 3u);
  EXPECT_EQ(d.tensors.at("b").shape(), (Shape{0, 5}));
  std::vector<uint8_t> unpadded = le64(2);
  unpadded.push_back('{');
  unpadded.push_back('}');
  EXPECT_EQ(parse_safetensors(unpadded).tensors.size(), 0u);
}

}  // namespace
}  // namespace ath
