// The safetensors header's two readers (src/io/safetensors_header.h): the fast one accepts only
// what the checked one accepts, reads it the same way, and declines the unusual but valid headers
// that the checked one then takes. fuzz_safetensors checks the same on generated headers.
#include <gtest/gtest.h>
#include <simdjson.h>

#include "io/safetensors_header.h"

namespace ath::detail::safetensors {
namespace {

struct Outcome {
  bool fast_accepts = false;
  bool checked_accepts = false;
  std::string fast_fault, checked_fault;  // what each threw, if it threw
  SafetensorsHeader fast, checked;
};

Outcome read_both(const std::string& json, uint64_t buffer_size) {
  const simdjson::padded_string text(json);
  Outcome o;
  o.fast.buffer_size = o.checked.buffer_size = buffer_size;
  try {
    o.fast_accepts = read_header_fast({text.data(), text.size()}, o.fast);
  } catch (const HeaderFault& f) {
    o.fast_fault = f.what;
  }
  try {
    read_header_checked({text.data(), text.size()}, o.checked);
    o.checked_accepts = true;
  } catch (const HeaderFault& f) {
    o.checked_fault = f.what;
  }
  return o;
}

void expect_same(const SafetensorsHeader& a, const SafetensorsHeader& b) {
  EXPECT_EQ(a.metadata, b.metadata);
  ASSERT_EQ(a.entries.size(), b.entries.size());
  for (std::size_t i = 0; i < a.entries.size(); ++i) {
    EXPECT_EQ(a.entries[i].name, b.entries[i].name);
    EXPECT_EQ(a.entries[i].dtype, b.entries[i].dtype);
    EXPECT_EQ(a.entries[i].shape, b.entries[i].shape);
    EXPECT_EQ(a.entries[i].begin, b.entries[i].begin);
    EXPECT_EQ(a.entries[i].end, b.entries[i].end);
  }
}

TEST(SafetensorsHeaderReaders, BothReadAnOrdinaryHeaderTheSameWay) {
  const std::string json = R"({"__metadata__":{"format":"pt","k":"v"},)"
                           R"("w":{"dtype":"F32","shape":[2,3],"data_offsets":[8,32]},)"
                           R"("b":{"shape":[2],"data_offsets":[0,8],"dtype":"F32"},)"
                           R"("a\u00e9":{"dtype":"U8","shape":[0],"data_offsets":[32,32]}})";
  Outcome o = read_both(json, 32);
  ASSERT_TRUE(o.fast_accepts);
  ASSERT_TRUE(o.checked_accepts);
  expect_same(o.fast, o.checked);
  EXPECT_EQ(o.fast.entries.front().name, "a\xc3\xa9");  // unescaped, and first in name order
}

TEST(SafetensorsHeaderReaders, FastDeclinesUnusualValidHeadersTheCheckedOneTakes) {
  // A dim written "-0", a field name written with an escape.
  for (const std::string json : {R"({"t":{"dtype":"U8","shape":[-0],"data_offsets":[0,0]}})",
                                 R"({"t":{"d\u0074ype":"U8","shape":[1],"data_offsets":[0,1]}})"}) {
    SCOPED_TRACE(json);
    Outcome o = read_both(json, json.find("[1]") != std::string::npos ? 1 : 0);
    EXPECT_FALSE(o.fast_accepts);
    EXPECT_TRUE(o.checked_accepts);
  }
}

TEST(SafetensorsHeaderReaders, FastRefusesWhatTheCheckedOneRefuses) {
  const std::string ok = R"("t":{"dtype":"U8","shape":[1],"data_offsets":[0,1]})";
  for (const std::string& json : std::vector<std::string>{
           "{" + ok + "} {}",          // a second document
           "{" + ok + "} x",           // trailing text
           "{" + ok + "," + ok + "}",  // a name twice
           "{" + ok + ",}",            // a trailing comma
           R"({"t":{"dtype":"U8","dtype":"U8","shape":[1],"data_offsets":[0,1]}})",
           R"({"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1,1]}})",
           R"({"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":0}})",
           R"({"t":{"dtype":"U8","shape":[1.0],"data_offsets":[0,1]}})",
           R"({"t":{"dtype":"U8","shape":[1]}})",
           R"({"__metadata__":{"k":"1","k":"2"}})",
           R"({"__metadata__":{},"__metadata__":{}})",
           R"({"__metadata__":{"k":1}})",
       }) {
    SCOPED_TRACE(json);
    Outcome o = read_both(json, 1);
    EXPECT_FALSE(o.fast_accepts);
    EXPECT_FALSE(o.checked_accepts);
  }
}

TEST(SafetensorsHeaderReaders, ACoverageFaultIsTheCheckedReadersOwn) {
  // Each entry is fine on its own, but they overlap: the fast reader throws the same fault.
  const std::string json = R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                           R"("b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})";
  const Outcome o = read_both(json, 6);
  EXPECT_NE(o.fast_fault.find("overlap"), std::string::npos) << o.fast_fault;
  EXPECT_EQ(o.fast_fault, o.checked_fault);
}

}  // namespace
}  // namespace ath::detail::safetensors
