// The two readers of a safetensors header's JSON, and what they share.
//
// parse_safetensors_header (safetensors_format.h) first runs the fast reader: one forward pass
// over the text with simdjson's On-Demand API, building entries in document order. It accepts
// only headers it can read without a doubt and gives up (returns false) on anything else. Then,
// and only then, the checked reader runs: simdjson's DOM, walked in name order, naming the first
// fault it finds (or accepting what the fast reader declined, e.g. a shape entry written "-0").
// A header is accepted exactly when the checked reader accepts it; fuzz_safetensors checks that
// the fast reader never accepts more, nor reads an accepted header differently.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "safetensors_format.h"

namespace ath::detail::safetensors {

// A fault in the header, with what is wrong; the caller turns it into "<source>: <what>".
struct HeaderFault {
  std::string what;
};

inline constexpr std::size_t kMaxArray = 64;  // longer than any shape: no reader goes further

// The first 8 bytes of a name, big-endian and zero-padded: integer order is the names' byte order
// as far as the prefixes differ. Sorting by (prefix, name) keeps most comparisons on integers
// held in the sort keys themselves; dtype names (at most 8 bytes) compare as one integer.
constexpr uint64_t name_prefix(std::string_view name) {
  uint64_t p = 0;
  for (std::size_t i = 0; i < 8; ++i) {
    p = (p << 8) | (i < name.size() ? static_cast<uint8_t>(name[i]) : 0u);
  }
  return p;
}

// `key == literal`, compiled to a few inline compares: a million entries mean three million keys,
// and a library memcmp call per candidate key was an eighth of the parse.
template <std::size_t N>
bool is_key(std::string_view key, const char (&literal)[N]) {
  return key.size() == N - 1 && std::memcmp(key.data(), literal, N - 1) == 0;
}

struct DTypeName {
  std::string_view name;
  DType dtype;
  int rank;  // position in the reference's Dtype enum: it orders tensors in the buffer
};
// The reference enum is BOOL U8 I8 F8_E5M2 F8_E4M3 I16 U16 F16 BF16 I32 U32 F32 F64 I64 U64
// ("increasing alignment order"); only the relative order of our eight matters.
inline constexpr std::array<DTypeName, 8> kDTypes{{{"BOOL", kBool, 0},
                                                   {"U8", kUInt8, 1},
                                                   {"F16", kFloat16, 7},
                                                   {"BF16", kBFloat16, 8},
                                                   {"I32", kInt32, 9},
                                                   {"F32", kFloat32, 11},
                                                   {"F64", kFloat64, 12},
                                                   {"I64", kInt64, 13}}};

const DTypeName& dtype_info(DType d);

// The athanor dtype a header's "dtype" string names, if it names one.
inline std::optional<DType> dtype_named(std::string_view s) {
  const uint64_t code = name_prefix(s);
  for (const DTypeName& n : kDTypes) {
    if (code == name_prefix(n.name) && s.size() == n.name.size()) return n.dtype;
  }
  return std::nullopt;
}

// An entry's element count, dim by dim, under the format's overflow rules: numel in u64 with
// overflow checks, in order, as the reference does (so [2^40, 2^40, 0] is refused although its
// product is 0); and, beyond the reference, the non-zero dims' product must fit int64 however the
// zeros are placed ([0, 2^40, 2^40] too), since athanor's strides hold it.
class NumelCounter {
 public:
  // False when `dim` makes the count overflow.
  bool add(uint64_t dim) {
    if (dim == 0) {
      numel_ = 0;
      return true;
    }
    if (numel_ > std::numeric_limits<uint64_t>::max() / dim) return false;
    if (nonzero_ > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / dim) return false;
    numel_ *= dim;
    nonzero_ *= dim;
    return true;
  }
  // The tensor's byte count, or nothing when it does not fit athanor's int64 byte counts.
  std::optional<uint64_t> nbytes(DType dtype) const {
    const uint64_t itemsize = element_size(dtype);
    if (numel_ > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / itemsize) {
      return std::nullopt;
    }
    return numel_ * itemsize;
  }

 private:
  uint64_t numel_ = 1, nonzero_ = 1;
};

// An entry's data_offsets and its index in the name-ordered entries, which breaks ties between
// equal offsets by name.
struct OffsetSpan {
  uint64_t begin, end;
  std::size_t index;
  auto operator<=>(const OffsetSpan&) const = default;
};
std::vector<OffsetSpan> offset_spans(const std::vector<SafetensorsEntry>& entries);

// The reference sorts entries by offsets and then requires them to tile [0, buffer_size):
// throws a HeaderFault naming the overlap, hole or trailing bytes. `entries` are in name order
// and `spans` theirs, in any order.
void check_coverage(std::vector<OffsetSpan> spans, const std::vector<SafetensorsEntry>& entries,
                    uint64_t buffer_size);

// The JSON text of a header, readable up to SIMDJSON_PADDING bytes past its end.
struct PaddedText {
  const char* data;
  std::size_t size;
};

// The fast reader: fills `h.entries` (name order) and `h.metadata` and returns true, or returns
// false (leaving `h` unspecified) for anything it does not accept outright. Entries that are each
// well-formed but do not tile the buffer throw check_coverage's HeaderFault, the one the checked
// reader would throw.
bool read_header_fast(PaddedText text, SafetensorsHeader& h);

// The checked reader: fills `h.entries` (name order) and `h.metadata`, or throws a HeaderFault
// naming the first fault.
void read_header_checked(PaddedText text, SafetensorsHeader& h);

}  // namespace ath::detail::safetensors
