// .npy reader and writer: numpy's exact bytes, round trips of every dtype and layout, the
// variants numpy and older numpy write (big-endian, Fortran order, versions 2.0/3.0, 16-byte
// alignment), and hostile files (every one a FormatError naming the file, never a crash).
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "athanor/athanor.h"
#include "athanor/io/npy.h"
#include "io/temp_dir.h"

namespace ath {
namespace {

using testing::read_bytes;
using testing::TempDir;
using testing::write_bytes;

std::vector<uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }

// A .npy file: the preamble for `version` with `dict` padded to a multiple of `align`, then data.
std::vector<uint8_t> npy_file(const std::string& dict, const std::vector<uint8_t>& data,
                              int version = 1, std::size_t align = 64) {
  const std::size_t prefix = version == 1 ? 10 : 12;
  std::string header = dict;
  while ((prefix + header.size() + 1) % align != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(version);
  out += '\0';
  for (std::size_t k = 0; k < prefix - 8; ++k)
    out += static_cast<char>((header.size() >> (8 * k)) & 0xff);
  std::vector<uint8_t> file = bytes_of(out + header);
  file.insert(file.end(), data.begin(), data.end());
  return file;
}

template <class T>
std::vector<uint8_t> raw(const std::vector<T>& v) {
  std::vector<uint8_t> out(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
  return out;
}

std::string format_error(const std::string& path) {
  try {
    (void)read_npy(path);
  } catch (const FormatError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(path + ": ", 0), 0u) << msg;
    return msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a FormatError: " << e.what();
    return {};
  }
  ADD_FAILURE() << path << " was accepted";
  return {};
}

TEST(Npy, WritesWhatNumpySaveWrites) {
  TempDir dir;
  // numpy.save(f, np.arange(6, dtype='<f4').reshape(2, 3)) (numpy 2.4): 118 header bytes.
  const std::string path = dir.file("a.npy");
  write_npy(path, to_dtype(arange(Scalar(6)), kFloat32).reshape({2, 3}));
  const std::vector<uint8_t> got = read_bytes(path);
  std::string want = std::string("\x93NUMPY\x01\x00v\x00", 10) +
                     "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  want += std::string(58, ' ') + "\n";
  ASSERT_EQ(got.size(), 128u + 24u);
  EXPECT_EQ(std::string(got.begin(), got.begin() + 128), want);
  float values[6];
  std::memcpy(values, got.data() + 128, sizeof(values));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(values[i], static_cast<float>(i));

  // A 0-d array and a 1-d one ("(3,)"), as numpy writes them.
  write_npy(path, full(Shape{}, Scalar(3.5), kFloat64));
  const std::vector<uint8_t> scalar = read_bytes(path);
  EXPECT_EQ(std::string(scalar.begin() + 10, scalar.begin() + 70),
            "{'descr': '<f8', 'fortran_order': False, 'shape': (), }     ");
  write_npy(path, arange(Scalar(3)));
  const std::vector<uint8_t> vec = read_bytes(path);
  const std::string one(vec.begin() + 10, vec.end());
  EXPECT_EQ(one.rfind("{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", 0), 0u);
  EXPECT_EQ(dir.entries().size(), 1u);  // no temporary file left
}

TEST(Npy, EveryDtypeRoundTrips) {
  TempDir dir;
  const std::string path = dir.file("t.npy");
  const Tensor base = sub(mul(randn({3, 4, 5}), Scalar(10)), Scalar(1));
  for (DType dt : {kFloat32, kFloat64, kFloat16, kInt64, kInt32, kUInt8, kBool}) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    const Tensor t = to_dtype(dt == kUInt8 ? abs(base) : base, dt);
    for (const Tensor& x :
         {t, t.transpose(0, 2), t.select(1, 2), t.reshape({-1}).select(0, 7), t.slice(0, 0, 0)}) {
      write_npy(path, x);
      const Tensor y = read_npy(path);
      EXPECT_EQ(y.dtype(), dt);
      EXPECT_EQ(y.shape(), x.shape());
      EXPECT_TRUE(y.is_contiguous());
      EXPECT_TRUE(equal(y, x));
    }
  }
}

TEST(Npy, BFloat16IsNoNumpyDtype) {
  TempDir dir;
  const std::string path = dir.file("bf.npy");
  try {
    write_npy(path, ones({2}, kBFloat16));
    FAIL() << "bfloat16 was written";
  } catch (const DTypeError& e) {
    EXPECT_NE(std::string(e.what()).find("numpy has no bfloat16"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  EXPECT_TRUE(dir.entries().empty());
  // ml_dtypes' bfloat16 arrays are saved as 2-byte voids.
  write_bytes(path, npy_file("{'descr': '<V2', 'fortran_order': False, 'shape': (1,), }", {0, 0}));
  EXPECT_NE(format_error(path).find("bfloat16"), std::string::npos);
}

TEST(Npy, AnyNonZeroBoolByteIsTrue) {
  TempDir dir;
  const std::string path = dir.file("b.npy");
  // numpy.load gives True for a stored 2 as for a 1; athanor's bool tensors hold 0 or 1.
  write_bytes(path,
              npy_file("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", {0, 1, 2}));
  const Tensor t = read_npy(path);
  EXPECT_EQ(to_dtype(t, kUInt8).to_vector<uint8_t>(), (std::vector<uint8_t>{0, 1, 1}));
}

TEST(Npy, BigEndianIsByteSwapped) {
  TempDir dir;
  const std::string path = dir.file("be.npy");
  std::vector<uint8_t> data = raw(std::vector<float>{1.5f, -2.0f, 3.25f});
  for (std::size_t i = 0; i < data.size(); i += 4)
    std::reverse(data.begin() + i, data.begin() + i + 4);
  write_bytes(path, npy_file("{'descr': '>f4', 'fortran_order': False, 'shape': (3,), }", data));
  EXPECT_EQ(read_npy(path).to_vector<float>(), (std::vector<float>{1.5f, -2.0f, 3.25f}));
  std::vector<uint8_t> ints = raw(std::vector<int64_t>{1, -300000000000});
  for (std::size_t i = 0; i < ints.size(); i += 8)
    std::reverse(ints.begin() + i, ints.begin() + i + 8);
  write_bytes(path, npy_file("{'descr': '>i8', 'fortran_order': False, 'shape': (2,), }", ints));
  EXPECT_EQ(read_npy(path).to_vector<int64_t>(), (std::vector<int64_t>{1, -300000000000}));
}

TEST(Npy, FortranOrderIsTransposed) {
  TempDir dir;
  const std::string path = dir.file("f.npy");
  // np.asfortranarray(np.arange(24).reshape(2, 3, 4)): element [i, j, k] at i + 2 j + 6 k.
  std::vector<int32_t> data(24);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k)
        data[static_cast<std::size_t>(i + 2 * j + 6 * k)] = 12 * i + 4 * j + k;
  write_bytes(path,
              npy_file("{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3, 4), }", raw(data)));
  const Tensor t = read_npy(path);
  EXPECT_EQ(t.shape(), Shape({2, 3, 4}));
  EXPECT_TRUE(equal(t, to_dtype(arange(Scalar(24)), kInt32).reshape({2, 3, 4})));
}

TEST(Npy, VersionsAndOlderNumpyHeaders) {
  TempDir dir;
  const std::string path = dir.file("v.npy");
  const std::vector<uint8_t> data = raw(std::vector<double>{1, 2, 3, 4});
  // Versions 2.0 and 3.0 (4-byte header length), keys in any order, double quotes, no trailing
  // comma, Python 2 longs and 16-byte alignment (numpy before 1.9).
  for (const auto& [dict, version, align] : std::vector<std::tuple<std::string, int, int>>{
           {"{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }", 2, 64},
           {"{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }", 3, 64},
           {"{\"shape\": (2,2), \"fortran_order\": False, \"descr\": \"<f8\"}", 1, 64},
           {"{'descr': '<f8', 'fortran_order': False, 'shape': (2L, 2L), }", 1, 16}}) {
    SCOPED_TRACE(dict);
    write_bytes(path, npy_file(dict, data, version, static_cast<std::size_t>(align)));
    const Tensor t = read_npy(path);
    EXPECT_EQ(t.shape(), Shape({2, 2}));
    EXPECT_EQ(t.to_vector<double>(), (std::vector<double>{1, 2, 3, 4}));
  }
}

TEST(Npy, HostileFilesAreFormatErrors) {
  TempDir dir;
  const std::string path = dir.file("bad.npy");
  const std::string ok_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  const std::vector<uint8_t> two_floats = raw(std::vector<float>{1, 2});
  auto error_for = [&](const std::vector<uint8_t>& bytes) {
    write_bytes(path, bytes);
    return format_error(path);
  };
  auto contains = [](const std::string& msg, const std::string& what) {
    return msg.find(what) != std::string::npos;
  };
  EXPECT_TRUE(contains(error_for({}), "not a .npy file"));
  EXPECT_TRUE(contains(error_for(bytes_of("PK\x03\x04 a zip (.npz)")), "not a .npy file"));
  std::vector<uint8_t> v9 = npy_file(ok_dict, two_floats);
  v9[6] = 9;
  EXPECT_TRUE(contains(error_for(v9), "version 9.0"));
  // The header length points past the end of the file.
  std::vector<uint8_t> long_header = npy_file(ok_dict, two_floats);
  long_header[8] = 0xff;
  long_header[9] = 0xff;
  EXPECT_TRUE(contains(error_for(long_header), "header length says 65535"));
  // The header claims more data than the file holds; or less.
  EXPECT_TRUE(contains(error_for(npy_file(ok_dict, {1, 2, 3})), "truncated"));
  std::vector<uint8_t> extra = two_floats;
  extra.push_back(0);
  EXPECT_TRUE(contains(error_for(npy_file(ok_dict, extra)), "1 bytes after"));
  // Shapes: overflowing products, digits beyond 64 bits, negative, too many dims.
  EXPECT_TRUE(
      contains(error_for(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, "
                                  "4294967296), }",
                                  two_floats)),
               "more elements than fit"));
  EXPECT_TRUE(contains(
      error_for(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4294967296, "
                         "4294967296), }",
                         {})),
      "more elements than fit"));
  EXPECT_TRUE(contains(error_for(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': "
                                          "(99999999999999999999,), }",
                                          two_floats)),
                       "64 bits"));
  EXPECT_TRUE(contains(
      error_for(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", two_floats)),
      "negative"));
  EXPECT_TRUE(contains(error_for(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': "
                                          "(1,1,1,1,1,1,1,1,1,1,1,1,1), }",
                                          {0, 0, 0, 0})),
                       "more than 12 dimensions"));
  // Malformed dicts.
  for (const auto& [dict, what] : std::vector<std::pair<std::string, std::string>>{
           {"", "not a Python dict"},
           {"{'descr': '<f4', 'fortran_order': False}", "lacks the key 'shape'"},
           {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", "twice"},
           {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", "unexpected key"},
           {"{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}", "neither True nor False"},
           {"{'descr': '<f4', 'fortran_order': False, 'shape': [2]}", "not a tuple"},
           {"{'descr': '<f4', 'fortran_order': False, 'shape': (2 2)}", "expected ','"},
           {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} junk", "after the header"},
           {"{'descr': '<f4, 'fortran_order': False, 'shape': (2,)}", "expected ','"},
           {"{'descr': 4, 'fortran_order': False, 'shape': (2,)}", "not a string"},
           {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)", "expected ','"},
           {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,)}", "structured"},
           {"{'descr': '<i2', 'fortran_order': False, 'shape': (2,)}", "dtype '<i2' is not"},
           {"{'descr': '<c8', 'fortran_order': False, 'shape': (2,)}", "dtype '<c8' is not"}}) {
    SCOPED_TRACE(dict);
    EXPECT_TRUE(contains(error_for(npy_file(dict, two_floats)), what));
  }
  // Every truncation of a valid file is refused.
  const std::vector<uint8_t> valid = npy_file(ok_dict, two_floats);
  for (std::size_t n = 0; n < valid.size(); ++n) {
    write_bytes(path, {valid.begin(), valid.begin() + static_cast<std::ptrdiff_t>(n)});
    EXPECT_THROW((void)read_npy(path), FormatError) << n;
  }
}

TEST(Npy, UnreadableAndUnwritablePathsAreIOErrors) {
  TempDir dir;
  EXPECT_THROW((void)read_npy(dir.file("missing.npy")), IOError);
  EXPECT_THROW((void)read_npy(dir.path().string()), IOError);  // a directory
  EXPECT_THROW(write_npy(dir.file("no/such/dir/x.npy"), ones({2})), IOError);
}

}  // namespace
}  // namespace ath
