// The 64-byte header in front of a packed weight (conv_pack_weight, linear_pack_weight): which
// primitive it was packed for, so a packed tensor handed to another geometry is an error, not
// a computation on the wrong layout (two geometries can have packed weights of the same size).
// The header also holds a hash of the weight format oneDNN chose (it may depend on the ISA and
// the thread count a primitive is built for): a primitive built later that wants another
// format is an error naming that, never a read in the wrong layout. 64 bytes keep the weight
// itself 64-byte aligned where the tensor is.
#pragma once

#include <cstdint>
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>

#include "athanor/core/error.h"
#include "athanor/ops/attr_hash.h"

namespace ath::kernels {

inline constexpr int64_t kPackedHeaderBytes = 64;
inline constexpr uint64_t kPackedMagic = 0x4154485041434b31ull;  // "ATHPACK1"

// The layout of a weight format: dims, padding, and for blocked formats the strides and inner
// blocks (the fields that decide where each element lives).
inline uint64_t weight_format_hash(const dnnl::memory::desc& md) {
  const dnnl_memory_desc_t& d = md.data;
  std::size_t h = ath::detail::hash_fields(d.ndims, static_cast<int>(d.format_kind),
                                           static_cast<int>(d.data_type));
  for (int i = 0; i < d.ndims; ++i)
    h = ath::detail::hash_combine(h, ath::detail::hash_fields(d.dims[i], d.padded_dims[i]));
  if (d.format_kind == dnnl_blocked) {
    const dnnl_blocking_desc_t& b = d.format_desc.blocking;
    for (int i = 0; i < d.ndims; ++i)
      h = ath::detail::hash_combine(h, static_cast<std::size_t>(b.strides[i]));
    h = ath::detail::hash_combine(h, static_cast<std::size_t>(b.inner_nblks));
    for (int i = 0; i < b.inner_nblks; ++i)
      h = ath::detail::hash_combine(h, ath::detail::hash_fields(b.inner_blks[i], b.inner_idxs[i]));
  }
  return static_cast<uint64_t>(h);
}

template <class A>
void write_packed_header(void* dst, const A& attrs, const dnnl::memory::desc& format) {
  const uint64_t header[3] = {kPackedMagic, static_cast<uint64_t>(hash_attrs(attrs)),
                              weight_format_hash(format)};
  std::memset(dst, 0, kPackedHeaderBytes);
  std::memcpy(dst, header, sizeof(header));
}

template <class A>
void check_packed_header(const void* src, const A& attrs, const dnnl::memory::desc& format,
                         const char* op) {
  uint64_t header[3];
  std::memcpy(header, src, sizeof(header));
  ATH_CHECK(header[0] == kPackedMagic && header[1] == static_cast<uint64_t>(hash_attrs(attrs)),
            ValueError, "{}: the packed weight was packed for another shape or epilogue", op);
  ATH_CHECK(header[2] == weight_format_hash(format), ValueError,
            "{}: the packed weight is in another format than this primitive reads (packed under "
            "another thread count or CPU ISA); pack it again",
            op);
}

inline const char* packed_data(const void* p) {
  return static_cast<const char*>(p) + kPackedHeaderBytes;
}
inline char* packed_data(void* p) { return static_cast<char*>(p) + kPackedHeaderBytes; }

}  // namespace ath::kernels
