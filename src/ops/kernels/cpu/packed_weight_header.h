// The 64-byte header in front of a packed weight (conv_pack_weight, linear_pack_weight): which
// primitive it was packed for, so a packed tensor handed to another geometry is an error, not
// a computation on the wrong layout (two geometries can have packed weights of the same size).
// 64 bytes keep the weight itself 64-byte aligned where the tensor is.
#pragma once

#include <cstdint>
#include <cstring>

#include "athanor/core/error.h"
#include "athanor/ops/attr_hash.h"

namespace ath::kernels {

inline constexpr int64_t kPackedHeaderBytes = 64;
inline constexpr uint64_t kPackedMagic = 0x4154485041434b31ull;  // "ATHPACK1"

template <class A>
void write_packed_header(void* dst, const A& attrs) {
  const uint64_t header[2] = {kPackedMagic, static_cast<uint64_t>(hash_attrs(attrs))};
  std::memset(dst, 0, kPackedHeaderBytes);
  std::memcpy(dst, header, sizeof(header));
}

template <class A>
void check_packed_header(const void* src, const A& attrs, const char* op) {
  uint64_t header[2];
  std::memcpy(header, src, sizeof(header));
  ATH_CHECK(header[0] == kPackedMagic && header[1] == static_cast<uint64_t>(hash_attrs(attrs)),
            ValueError, "{}: the packed weight was packed for another shape or epilogue", op);
}

inline const char* packed_data(const void* p) {
  return static_cast<const char*>(p) + kPackedHeaderBytes;
}
inline char* packed_data(void* p) { return static_cast<char*>(p) + kPackedHeaderBytes; }

}  // namespace ath::kernels
