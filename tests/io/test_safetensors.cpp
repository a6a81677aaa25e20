// safetensors: round trips (every dtype, 0-dim, 0-size, non-contiguous), metadata, byte-for-byte
// agreement with the reference writer, zero-copy loading and atomic saving.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "athanor/athanor.h"
#include "athanor/io/atomic_file.h"
#include "athanor/io/safetensors.h"
#include "io/temp_dir.h"

namespace ath {
namespace {

using testing::read_bytes;
using testing::TempDir;

constexpr DType kAll[] = {kFloat32, kFloat64, kBFloat16, kFloat16, kInt64, kInt32, kUInt8, kBool};

std::vector<uint8_t> bytes_of(const Tensor& t) {
  Tensor c = t.contiguous();
  const auto* p = static_cast<const uint8_t*>(c.data_ptr());
  return std::vector<uint8_t>(p, p + c.nbytes());
}

Tensor random_tensor(DType dtype, const Shape& shape) {
  if (is_floating(dtype)) return randn(shape).to(dtype);
  if (dtype == kBool) return randint(0, 2, shape).to(kBool);
  if (dtype == kUInt8) return randint(0, 256, shape).to(kUInt8);
  return randint(-100000, 100000, shape, {.dtype = dtype});
}

void expect_same(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_TRUE(got.defined()) << what;
  EXPECT_EQ(got.dtype(), want.dtype()) << what;
  EXPECT_EQ(got.shape(), want.shape()) << what;
  EXPECT_EQ(bytes_of(got), bytes_of(want)) << what;
}

void expect_same(const StateDict& got, const StateDict& want) {
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [name, t] : want) {
    ASSERT_TRUE(got.contains(name)) << name;
    expect_same(got.at(name), t, name);
  }
}

// The JSON header of serialized bytes.
nlohmann::ordered_json header_of(const std::vector<uint8_t>& bytes) {
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  return nlohmann::ordered_json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<long>(n));
}

StateDict every_dtype_and_shape() {
  manual_seed(7);
  StateDict sd;
  const Shape shapes[] = {{2, 3}, {}, {0}, {3, 0, 2}, {5}, {2, 1, 3, 1}};
  for (DType d : kAll) {
    for (std::size_t i = 0; i < std::size(shapes); ++i) {
      sd.insert(fmt::format("{}.{}", dtype_name(d), i), random_tensor(d, shapes[i]));
    }
  }
  // Floating bit patterns a value-based copy could lose: NaN payloads, -0, infinities, denormals.
  const uint32_t f32_bits[] = {0x7fc00001u, 0xffc12345u, 0x80000000u, 0x7f800000u, 0x00000001u};
  sd.insert("special.f32", from_blob_copy(f32_bits, {5}, kFloat32));
  const uint16_t h_bits[] = {0x7e01, 0x8000, 0xfc00, 0x0001};
  sd.insert("special.f16", from_blob_copy(h_bits, {4}, kFloat16));
  sd.insert("special.bf16", from_blob_copy(h_bits, {4}, kBFloat16));
  return sd;
}

TEST(Safetensors, RoundTripEveryDtypeBitwise) {
  TempDir dir;
  StateDict sd = every_dtype_and_shape();
  const std::string path = dir.file("all.safetensors");
  save_safetensors(path, sd);

  std::vector<uint8_t> bytes = serialize_safetensors(sd);
  EXPECT_EQ(read_bytes(path), bytes) << "the file and serialize_safetensors agree";

  SafetensorsData from_file = load_safetensors(path);
  expect_same(from_file.tensors, sd);
  EXPECT_TRUE(from_file.metadata.empty());
  expect_same(parse_safetensors(bytes).tensors, sd);

  // Loaded tensors serialize back to the same bytes.
  EXPECT_EQ(serialize_safetensors(from_file.tensors), bytes);
  // Keys come back in name order, as Python's safe_open().keys().
  std::vector<std::string> keys;
  for (const auto& [k, t] : from_file.tensors) keys.push_back(k);
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
}

TEST(Safetensors, EmptyStateDict) {
  StateDict empty_sd;
  SafetensorsData d = parse_safetensors(serialize_safetensors(empty_sd));
  EXPECT_EQ(d.tensors.size(), 0u);
}

TEST(Safetensors, NonContiguousInputsAreWrittenRowMajor) {
  manual_seed(3);
  Tensor m = randn({4, 6});
  Tensor big = randn({700, 500});  // > 1 MiB: the strided gather flushes in several chunks
  StateDict sd;
  sd.insert("transposed", m.t());
  sd.insert("step2", m.slice(1, 0, 6, 2));
  sd.insert("narrow_last", m.narrow(1, 1, 3));  // rows contiguous, the whole is not
  sd.insert("column", m.select(1, 2));
  sd.insert("expanded", randn({3, 1}).expand({3, 4}));
  sd.insert("permuted", randn({2, 3, 4}).to(kFloat64).permute({2, 0, 1}));
  sd.insert("int_transposed", randint(0, 100, {3, 5}).t());
  sd.insert("bool_step", randint(0, 2, {9}).to(kBool).slice(0, 1, 9, 3));
  sd.insert("big_transposed", big.t());
  for (const auto& [name, t] : sd) {
    if (name != "column") {
      ASSERT_FALSE(t.is_contiguous()) << name;
    }
  }
  TempDir dir;
  save_safetensors(dir.file("nc.safetensors"), sd);
  SafetensorsData d = load_safetensors(dir.file("nc.safetensors"));
  expect_same(d.tensors, sd);
  for (const auto& [name, t] : d.tensors) EXPECT_TRUE(t.is_contiguous()) << name;
}

TEST(Safetensors, MetadataRoundTrip) {
  const SafetensorsMetadata meta{{"format", "pt"},
                                 {"quote\"and\\backslash", "line\nbreak\ttab"},
                                 {"unicode", "Grüße, 世界 ✓"},
                                 {"empty", ""},
                                 {"", "empty key"}};
  StateDict sd;
  sd.insert("w", ones({2}));
  TempDir dir;
  save_safetensors(dir.file("m.safetensors"), sd, meta);
  EXPECT_EQ(load_safetensors(dir.file("m.safetensors")).metadata, meta);
  EXPECT_EQ(SafetensorsFile(dir.file("m.safetensors")).metadata(), meta);
  std::vector<uint8_t> bytes = serialize_safetensors(sd, meta);
  EXPECT_EQ(parse_safetensors(bytes).metadata, meta);
  // "__metadata__" comes first, as the reference writes it; absent when there is none.
  EXPECT_EQ(header_of(bytes).begin().key(), "__metadata__");
  EXPECT_FALSE(header_of(serialize_safetensors(sd)).contains("__metadata__"));
}

// The byte strings of the reference implementation's own serialization tests
// (safetensors/src/tensor.rs: test_empty, test_serialization,
// test_serialization_forced_alignement).
TEST(Safetensors, MatchesTheReferenceWriterByteForByte) {
  StateDict none;
  EXPECT_EQ(serialize_safetensors(none),
            (std::vector<uint8_t>{8, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' ', ' ', ' ', ' ', ' '}));
  std::vector<uint8_t> with_meta = serialize_safetensors(none, {{"framework", "pt"}});
  std::string expected_meta =
      std::string("(\0\0\0\0\0\0\0", 8) + R"({"__metadata__":{"framework":"pt"}})" + "     ";
  EXPECT_EQ(std::string(with_meta.begin(), with_meta.end()), expected_meta);

  Tensor data = arange(0, 6).to(kFloat32);
  StateDict a;
  a.insert("attn.0", data.view({1, 2, 3}));
  std::vector<uint8_t> out = serialize_safetensors(a);
  std::string json = R"({"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}})";
  ASSERT_EQ(json.size(), 64u);  // a multiple of 8: no padding
  std::vector<uint8_t> expected = {64, 0, 0, 0, 0, 0, 0, 0};
  expected.insert(expected.end(), json.begin(), json.end());
  for (float f : {0.f, 1.f, 2.f, 3.f, 4.f, 5.f}) {
    const auto* b = reinterpret_cast<const uint8_t*>(&f);
    expected.insert(expected.end(), b, b + 4);
  }
  EXPECT_EQ(out, expected);

  StateDict b;
  b.insert("attn0", data.view({1, 1, 2, 3}));
  out = serialize_safetensors(b);
  json = R"({"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}})";
  ASSERT_EQ(json.size(), 65u);
  EXPECT_EQ(out[0], 72);  // 65 + 7 spaces
  EXPECT_EQ(std::string(out.begin() + 8, out.begin() + 80), json + "       ");
}

TEST(Safetensors, WriteOrderIsDescendingDtypeAlignmentThenName) {
  StateDict sd;
  sd.insert("b_bool", zeros({1}, kBool));
  sd.insert("a_f32", zeros({1}, kFloat32));
  sd.insert("z_i64", zeros({1}, kInt64));
  sd.insert("c_u8", zeros({1}, kUInt8));
  sd.insert("a_bf16", zeros({1}, kBFloat16));
  sd.insert("m_f16", zeros({1}, kFloat16));
  sd.insert("y_f64", zeros({1}, kFloat64));
  sd.insert("k_i32", zeros({1}, kInt32));
  sd.insert("0_f32", zeros({1}, kFloat32));
  std::vector<std::string> order;
  uint64_t expected_begin = 0;
  const nlohmann::ordered_json header = header_of(serialize_safetensors(sd));
  for (const auto& [name, info] : header.items()) {
    order.push_back(name);
    EXPECT_EQ(info["data_offsets"][0].get<uint64_t>(), expected_begin) << name;
    expected_begin = info["data_offsets"][1].get<uint64_t>();
  }
  EXPECT_EQ(order, (std::vector<std::string>{"z_i64", "y_f64", "0_f32", "a_f32", "k_i32", "a_bf16",
                                             "m_f16", "c_u8", "b_bool"}));
}

TEST(Safetensors, LoadIsZeroCopyAndOutlivesTheFileObject) {
  TempDir dir;
  const std::string path = dir.file("big.safetensors");
  StateDict sd;
  sd.insert("w", arange(0, 1 << 20).to(kFloat32));  // 4 MiB
  save_safetensors(path, sd);
  const std::vector<uint8_t> on_disk = read_bytes(path);

  int64_t before = memory_stats().current_bytes;
  Tensor w;
  {
    SafetensorsFile f(path);
    w = f.get("w");
    EXPECT_LT(memory_stats().current_bytes - before, 1 << 20) << "the 4 MiB were not copied";
  }  // the file object is gone; the tensor keeps the mapping
  EXPECT_EQ(w.numel(), 1 << 20);
  EXPECT_EQ(w.data<float>()[12345], 12345.f);

  // The mapping is private: writing to a loaded tensor never changes the file.
  w.fill_(-1);
  EXPECT_EQ(w.data<float>()[7], -1.f);
  EXPECT_EQ(read_bytes(path), on_disk);
  EXPECT_EQ(load_safetensors(path).tensors.at("w").data<float>()[7], 7.f);
}

TEST(Safetensors, MisalignedTensorsAreCopiedNotViewed) {
  // Another tool could put an F32 at an odd buffer offset: the view would be misaligned.
  std::string json = R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                     R"("b":{"dtype":"F32","shape":[2],"data_offsets":[1,9]}})";
  json.append((8 - json.size() % 8) % 8, ' ');
  std::vector<uint8_t> file(8, 0);
  file[0] = static_cast<uint8_t>(json.size());
  file.insert(file.end(), json.begin(), json.end());
  file.push_back(42);
  for (float f : {1.5f, -2.f}) {
    const auto* b = reinterpret_cast<const uint8_t*>(&f);
    file.insert(file.end(), b, b + 4);
  }
  TempDir dir;
  testing::write_bytes(dir.file("odd.safetensors"), file);
  for (const SafetensorsData& d :
       {load_safetensors(dir.file("odd.safetensors")), parse_safetensors(file)}) {
    Tensor b = d.tensors.at("b");
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data_ptr()) % 4, 0u);
    EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{1.5f, -2.f}));
    EXPECT_EQ(d.tensors.at("a").item<int>(), 42);
  }
}

TEST(Safetensors, FileObjectLooksUpByName) {
  TempDir dir;
  StateDict sd;
  sd.insert("layer.weight", ones({2, 3}));
  sd.insert("layer.bias", zeros({2}, kFloat64));
  save_safetensors(dir.file("f.safetensors"), sd, {{"k", "v"}});
  SafetensorsFile f(dir.file("f.safetensors"));
  EXPECT_EQ(f.size(), 2u);
  EXPECT_EQ(f.keys(), (std::vector<std::string>{"layer.bias", "layer.weight"}));
  EXPECT_TRUE(f.contains("layer.bias"));
  EXPECT_FALSE(f.contains("layer"));
  const SafetensorsEntry& e = f.entry("layer.weight");
  EXPECT_EQ(e.dtype, kFloat32);
  EXPECT_EQ(e.shape, (Shape{2, 3}));
  EXPECT_EQ(e.end - e.begin, 24u);
  EXPECT_EQ(f.metadata().at("k"), "v");
  try {
    (void)f.get("missing");
    FAIL() << "expected KeyError";
  } catch (const KeyError& err) {
    EXPECT_NE(std::string(err.what()).find("missing"), std::string::npos) << err.what();
    EXPECT_NE(std::string(err.what()).find(dir.file("f.safetensors")), std::string::npos);
  }
  expect_same(f.state_dict(), sd);
  EXPECT_EQ(safetensors_dtype_name(kBFloat16), "BF16");
}

// ---- saving: atomic, and every failure an error that leaves the destination alone ------------

template <class E, class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
    return "";
  }
  ADD_FAILURE() << "no exception";
  return "";
}

TEST(SafetensorsSave, OverwritesAtomicallyAndLeavesNoTemporaryFile) {
  TempDir dir;
  const std::string path = dir.file("model.safetensors");
  StateDict first, second;
  first.insert("w", ones({3}));
  second.insert("w", zeros({100}));
  save_safetensors(path, first);
  save_safetensors(path, second);
  EXPECT_EQ(load_safetensors(path).tensors.at("w").numel(), 100);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"model.safetensors"});
}

TEST(SafetensorsSave, BadNamesAreValueErrorsAndWriteNothing) {
  TempDir dir;
  StateDict reserved;
  reserved.insert("__metadata__", ones({1}));
  EXPECT_NE(
      error_of<ValueError>([&] { save_safetensors(dir.file("x"), reserved); }).find("__metadata__"),
      std::string::npos);
  StateDict bad_utf8;
  bad_utf8.insert("w\xff", ones({1}));
  EXPECT_NE(error_of<ValueError>([&] { save_safetensors(dir.file("x"), bad_utf8); }).find("UTF-8"),
            std::string::npos);
  StateDict ok;
  ok.insert("w", ones({1}));
  EXPECT_NE(error_of<ValueError>([&] {
              save_safetensors(dir.file("x"), ok, {{"k", "bad \xc3"}});
            }).find("UTF-8"),
            std::string::npos);
  EXPECT_TRUE(dir.entries().empty());
}

TEST(SafetensorsSave, UnwritableDestinationsAreIOErrorsNamingThePath) {
  TempDir dir;
  StateDict sd;
  sd.insert("w", ones({4}));
  const std::string missing_dir = dir.file("no/such/dir/model.safetensors");
  std::string msg = error_of<IOError>([&] { save_safetensors(missing_dir, sd); });
  EXPECT_NE(msg.find(missing_dir), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::strerror(ENOENT)), std::string::npos) << msg;

  // The destination is a directory: the rename fails after the data was written; the directory
  // stays as it was and the temporary file is removed.
  std::filesystem::create_directory(dir.file("taken"));
  testing::write_bytes(dir.file("taken/inside"), {1, 2, 3});
  msg = error_of<IOError>([&] { save_safetensors(dir.file("taken"), sd); });
  EXPECT_NE(msg.find(dir.file("taken")), std::string::npos) << msg;
  EXPECT_EQ(read_bytes(dir.file("taken/inside")), (std::vector<uint8_t>{1, 2, 3}));
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"taken"});
}

TEST(SafetensorsSave, AFailedWriteLeavesTheOldFileIntact) {
  TempDir dir;
  const std::string path = dir.file("model.safetensors");
  StateDict old_sd, big;
  old_sd.insert("w", ones({8}));
  big.insert("w", zeros({1 << 18}));  // 1 MiB
  save_safetensors(path, old_sd);
  const std::vector<uint8_t> old_bytes = read_bytes(path);

  // A file-size limit makes write() fail with EFBIG half way through (SIGXFSZ ignored).
  struct rlimit saved {};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = saved;
  small.rlim_cur = 64 * 1024;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string msg = error_of<IOError>([&] { save_safetensors(path, big); });
  setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, old_handler);

  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::strerror(EFBIG)), std::string::npos) << msg;
  EXPECT_EQ(read_bytes(path), old_bytes);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"model.safetensors"});
}

TEST(SafetensorsSave, AtomicFileWriterWithoutCommitLeavesNothing) {
  TempDir dir;
  {
    AtomicFileWriter w(dir.file("out.bin"));
    w.write("abc", 3);
    // The temporary file: unnamed (O_TMPFILE), or a named one where the file system lacks it.
    EXPECT_EQ(dir.entries().size(), w.temp_path().empty() ? 0u : 1u);
  }
  EXPECT_TRUE(dir.entries().empty());
  const uint8_t bytes[] = {1, 2, 3};
  write_file_atomic(dir.file("out.bin"), bytes);
  EXPECT_EQ(read_bytes(dir.file("out.bin")), (std::vector<uint8_t>{1, 2, 3}));
}

// A writer SIGKILLed mid-save left "<name>.tmp.<pid>.<n>" behind forever; the next save of the
// same file removes those of processes that no longer exist.
TEST(SafetensorsSave, NextSaveRemovesTemporariesOfDeadWriters) {
  TempDir dir;
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);  // reaped: its PID names no process now
  const std::string dead = fmt::format("out.bin.tmp.{}.7", child);
  const std::string live = "out.bin.tmp.1.3";  // init is alive: a writer that may still finish
  for (const std::string& name :
       {dead, live, std::string("out.bin.tmp.notes"), fmt::format("other.bin.tmp.{}.0", child)}) {
    std::ofstream(dir.file(name)) << "partial";
  }
  const uint8_t bytes[] = {4, 5};
  write_file_atomic(dir.file("out.bin"), bytes);
  std::vector<std::string> left = dir.entries();
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{fmt::format("other.bin.tmp.{}.0", child), "out.bin",
                                            live, "out.bin.tmp.notes"}));
}

// A writer SIGKILLed in the middle of a big save (a rank of a training job killed while writing
// its checkpoint) leaves neither the file nor a temporary: the data went to an unnamed O_TMPFILE
// file, which the kernel frees with the process. An earlier save of the same path stays intact.
TEST(SafetensorsSave, AWriterKilledMidWriteLeavesNoFile) {
  TempDir dir;
  const int probe = ::open(dir.path().c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
  if (probe < 0) GTEST_SKIP() << "no O_TMPFILE on " << dir.path() << ": " << std::strerror(errno);
  ::close(probe);
  const std::string path = dir.file("model.safetensors"), other = dir.file("old.safetensors");
  StateDict old_sd;
  old_sd.insert("w", randn({16}));
  save_safetensors(other, old_sd);
  const std::vector<uint8_t> old_bytes = read_bytes(other);
  const std::vector<char> chunk(1 << 20, 'x');  // allocated before fork: the child only writes

  for (const std::string& target : {path, other}) {
    int ready[2];
    ASSERT_EQ(::pipe(ready), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::close(ready[0]);
      AtomicFileWriter w(target);
      for (int mb = 0; mb < 256; ++mb) {
        w.write(chunk.data(), chunk.size());
        if (mb == 3 && ::write(ready[1], "w", 1) != 1) ::_exit(3);  // 4 MB written, going on
      }
      ::pause();  // never commits: the parent kills it first
      ::_exit(2);
    }
    ::close(ready[1]);
    char c = 0;
    ASSERT_EQ(::read(ready[0], &c, 1), 1) << "the writer died before writing 4 MB";
    ::close(ready[0]);
    ASSERT_EQ(::kill(child, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
    EXPECT_EQ(dir.entries(), std::vector<std::string>{"old.safetensors"}) << target;
  }
  EXPECT_EQ(read_bytes(other), old_bytes);
  expect_same(load_safetensors(other).tensors, old_sd);
}

TEST(SafetensorsLoad, MissingFilesAreIOErrorsNamingThePath) {
  TempDir dir;
  const std::string path = dir.file("absent.safetensors");
  std::string msg = error_of<IOError>([&] { (void)load_safetensors(path); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::strerror(ENOENT)), std::string::npos) << msg;
  msg = error_of<IOError>([&] { SafetensorsFile f(dir.path().string()); });
  EXPECT_NE(msg.find("': a directory"), std::string::npos) << msg;
}

}  // namespace
}  // namespace ath
