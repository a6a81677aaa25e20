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
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>

#include "athanor/core/error.h"
#include "athanor/ops/attr_hash.h"
#include "athanor/tensor/tensor.h"
#include "common/dnnl_utils.h"

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

// `format_word`: weight_format_hash of the oneDNN format the weight is in, or a kernel's own
// constant for a layout of its own (linear_packed's direct loop).
template <class A>
void write_packed_header(void* dst, const A& attrs, uint64_t format_word) {
  const uint64_t header[3] = {kPackedMagic, static_cast<uint64_t>(hash_attrs(attrs)), format_word};
  std::memset(dst, 0, kPackedHeaderBytes);
  std::memcpy(dst, header, sizeof(header));
}

template <class A>
void write_packed_header(void* dst, const A& attrs, const dnnl::memory::desc& format) {
  write_packed_header(dst, attrs, weight_format_hash(format));
}

template <class A>
void check_packed_header(const void* src, const A& attrs, uint64_t format_word, const char* op) {
  uint64_t header[3];
  std::memcpy(header, src, sizeof(header));
  ATH_CHECK(header[0] == kPackedMagic && header[1] == static_cast<uint64_t>(hash_attrs(attrs)),
            ValueError, "{}: the packed weight was packed for another shape or epilogue", op);
  ATH_CHECK(header[2] == format_word, ValueError,
            "{}: the packed weight is in another format than this kernel reads (packed under "
            "another thread count or CPU ISA); pack it again",
            op);
}

template <class A>
void check_packed_header(const void* src, const A& attrs, const dnnl::memory::desc& format,
                         const char* op) {
  check_packed_header(src, attrs, weight_format_hash(format), op);
}

inline const char* packed_data(const void* p) {
  return static_cast<const char*>(p) + kPackedHeaderBytes;
}
inline char* packed_data(void* p) { return static_cast<char*>(p) + kPackedHeaderBytes; }

// What the packed-weight primitives (conv_blocked, linear_packed) cache: the primitive, the
// reorder that packs a plain weight into its format, and their descriptors.
struct PackedEntry : CachedPrimitive {
  dnnl::primitive prim;
  dnnl::reorder pack;  // plain_weights -> weights
  dnnl::memory::desc src, weights, plain_weights, bias, dst, scratchpad;
  dnnl::memory::desc addend;  // a binary-add post-op's tensor (linear_packed's residual), if any

  // Takes the weight format and scratchpad the primitive chose, and builds the packing reorder.
  template <class PrimitiveDesc>
  void finish(const PrimitiveDesc& pd) {
    weights = pd.weights_desc();
    scratchpad = pd.scratchpad_desc();
    pack = dnnl::reorder(
        dnnl::reorder::primitive_desc(cpu_engine(), plain_weights, cpu_engine(), weights));
  }
};

// Writes `weight` (plain) into `out` as header + the entry's format.
template <class A>
void pack_weight(const PackedEntry& e, const Tensor& weight, Tensor& out, const A& attrs) {
  const Tensor w = weight.contiguous();
  dnnl::stream& s = cpu_stream();
  dnnl::memory src = make_memory(e.plain_weights, w.data_ptr());
  write_packed_header(out.data_ptr(), attrs, e.weights);
  dnnl::memory dst = make_memory(e.weights, packed_data(out.data_ptr()));
  e.pack.execute(s, src, dst);
  s.wait();
}

// Runs the entry on src, the packed weight (its size and header checked first), dst, an
// optional bias and an optional addend (the first post-op's second operand).
template <class A>
void run_packed(const std::shared_ptr<const PackedEntry>& e, const A& attrs, const char* op,
                const void* src, const Tensor& packed_weight, void* dst, const void* bias,
                const void* addend = nullptr) {
  const auto bytes = static_cast<int64_t>(packed_weight.nbytes());
  ATH_CHECK(packed_weight.is_contiguous() &&
                bytes == static_cast<int64_t>(e->weights.get_size()) + kPackedHeaderBytes,
            ShapeError, "{}: a packed weight of {} bytes was packed for another shape", op, bytes);
  const void* packed = packed_weight.data_ptr();
  check_packed_header(packed, attrs, e->weights, op);
  CallArgs& args = thread_call_args(e);
  bind_arg(args, DNNL_ARG_SRC, e->src, src);
  bind_arg(args, DNNL_ARG_WEIGHTS, e->weights, packed_data(packed));
  bind_arg(args, DNNL_ARG_DST, e->dst, dst);
  if (bias != nullptr) bind_arg(args, DNNL_ARG_BIAS, e->bias, bias);
  if (addend != nullptr)
    bind_arg(args, DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, e->addend, addend);
  bind_scratchpad(args, e->scratchpad);
  execute(e->prim, args);
}

}  // namespace ath::kernels
