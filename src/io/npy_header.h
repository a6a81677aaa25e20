// The .npy preamble: magic, version, header length and the header's Python dict literal
// ({'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }). Parsed by a small recursive
// descent that accepts what numpy.save writes (and older numpy's variants: 16-byte alignment,
// 'L'-suffixed Python 2 integers, any key order) and nothing that needs Python to evaluate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ath::detail {

struct NpyHeader {
  int major = 1, minor = 0;
  std::string descr;  // as written: "<f4", ">i8", "|b1", ...
  bool fortran_order = false;
  std::vector<int64_t> shape;
  std::size_t data_offset = 0;  // bytes before the array's data
};

// Reads the preamble and dict at the start of `file`. Every fault is a FormatError
// "<name>: <what>"; nothing outside `file` is read.
NpyHeader parse_npy_header(std::span<const uint8_t> file, const std::string& name);

// The preamble and header numpy.save writes for this dtype and shape (C order): version 1.0
// (2.0 for a header over 65535 bytes), the dict, numpy's spare growth space, padding so the data
// starts on a 64-byte boundary.
std::string format_npy_header(const std::string& descr, std::span<const int64_t> shape);

}  // namespace ath::detail
