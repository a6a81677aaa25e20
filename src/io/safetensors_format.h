// The safetensors header, on its own: validating one read from untrusted bytes, and planning one
// for writing. The tensor data itself is handled by safetensors.cpp.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "athanor/io/safetensors.h"

namespace ath::detail {

inline constexpr uint64_t kSafetensorsMaxHeader = 100'000'000;  // the reference's MAX_HEADER_SIZE

struct SafetensorsHeader {
  std::vector<SafetensorsEntry> entries;  // name order
  SafetensorsMetadata metadata;
  uint64_t buffer_offset = 0;  // 8 + header length: where the byte buffer starts
  uint64_t buffer_size = 0;
};

// Validates `file` (a whole safetensors file) completely: header length, JSON, every entry's
// fields, dtype, shape and offsets, and that the entries tile the buffer exactly. Every fault is a
// FormatError "<source>: <fault>". Tensor bytes are not read.
SafetensorsHeader parse_safetensors_header(std::span<const uint8_t> file, std::string_view source);

// The header for writing `tensors`: the 8-byte length, the JSON (compact, "__metadata__" first,
// then the tensors in write order) and the space padding to a multiple of 8 bytes.
struct SafetensorsPlan {
  std::string header;                          // length prefix + JSON + padding
  std::vector<const StateDict::Entry*> order;  // tensors in buffer order
  uint64_t buffer_size = 0;
};
SafetensorsPlan plan_safetensors(const StateDict& tensors, const SafetensorsMetadata& metadata);

// A quoted, escaped, length-capped name for error messages (names come from untrusted files).
std::string quote_name(std::string_view name);

}  // namespace ath::detail
