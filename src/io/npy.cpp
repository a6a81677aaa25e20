#include "athanor/io/npy.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

#include "athanor/core/error.h"
#include "athanor/io/atomic_file.h"
#include "mapped_file.h"
#include "npy_header.h"
#include "tensor_bytes.h"

namespace ath {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the .npy reader assumes a little-endian host");

struct Descr {
  DType dtype;
  bool swap;  // big-endian data, byte-swapped as it is read
};

std::optional<DType> dtype_of_code(std::string_view code) {
  if (code == "f4") return kFloat32;
  if (code == "f8") return kFloat64;
  if (code == "f2") return kFloat16;
  if (code == "i8") return kInt64;
  if (code == "i4") return kInt32;
  if (code == "u1") return kUInt8;
  if (code == "b1") return kBool;
  return std::nullopt;
}

Descr parse_descr(const std::string& descr, const std::string& path) {
  const char order = descr.empty() ? '\0' : descr[0];
  const bool has_order = order == '<' || order == '>' || order == '|' || order == '=';
  const std::string_view code = std::string_view(descr).substr(has_order ? 1 : 0);
  if (code == "V2") {
    ATH_THROW(FormatError,
              "{}: dtype '{}' (2-byte void) is not supported: bfloat16 arrays (ml_dtypes) are "
              "saved this way; save them as float32",
              path, descr);
  }
  const std::optional<DType> dt = dtype_of_code(code);
  ATH_CHECK(dt.has_value(), FormatError,
            "{}: dtype '{}' is not supported (athanor reads <f4 <f8 <f2 <i8 <i4 |u1 |b1: "
            "float32, float64, float16, int64, int32, uint8, bool)",
            path, descr);
  return {*dt, order == '>' && element_size(*dt) > 1};
}

void byte_swap(uint8_t* data, std::size_t n, std::size_t item) {
  for (std::size_t i = 0; i < n; i += item) std::reverse(data + i, data + i + item);
}

// `src` holds the array in Fortran (column-major) order; writes it into `t` row-major.
void from_fortran_order(const uint8_t* src, Tensor& t) {
  const std::size_t item = t.element_size();
  const int64_t ndim = t.dim();
  std::vector<int64_t> fstride(static_cast<std::size_t>(ndim)), idx(fstride.size(), 0);
  int64_t s = 1;
  for (int64_t d = 0; d < ndim; ++d) {
    fstride[static_cast<std::size_t>(d)] = s;
    s *= t.size(d);
  }
  auto* dst = static_cast<uint8_t*>(t.data_ptr());
  int64_t at = 0;  // the Fortran-order element of the current row-major index
  for (int64_t i = 0, n = t.numel(); i < n; ++i) {
    std::memcpy(dst + static_cast<std::size_t>(i) * item, src + static_cast<std::size_t>(at) * item,
                item);
    for (int64_t d = ndim - 1; d >= 0; --d) {
      const auto du = static_cast<std::size_t>(d);
      at += fstride[du];
      if (++idx[du] < t.size(d)) break;
      at -= fstride[du] * t.size(d);
      idx[du] = 0;
    }
  }
}

}  // namespace

std::string npy_descr(DType dtype) {
  switch (dtype) {
    case kFloat32:
      return "<f4";
    case kFloat64:
      return "<f8";
    case kFloat16:
      return "<f2";
    case kInt64:
      return "<i8";
    case kInt32:
      return "<i4";
    case kUInt8:
      return "|u1";
    case kBool:
      return "|b1";
    case kBFloat16:
      break;
  }
  ATH_THROW(DTypeError, "numpy has no bfloat16 dtype: convert the tensor to float32 first");
}

Tensor read_npy(const std::string& path) {
  const detail::MappedFile file(path);
  const std::span<const uint8_t> bytes = file.bytes();
  const detail::NpyHeader h = detail::parse_npy_header(bytes, path);
  const Descr descr = parse_descr(h.descr, path);
  const std::size_t item = element_size(descr.dtype);

  // The element count, and the product of the non-zero dims, must both fit int64: a zero dim
  // does not make (0, 2^40, 2^40) a shape athanor can hold (its strides would overflow).
  Shape shape;
  uint64_t numel = 1, nonzero = 1;
  for (int64_t d : h.shape) {
    shape.push_back(d);
    if (d == 0) {
      numel = 0;
      continue;
    }
    const auto du = static_cast<uint64_t>(d);
    ATH_CHECK(nonzero <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / du,
              FormatError, "{}: the shape {} has more elements than fit in 64 bits", path,
              to_string(shape));
    nonzero *= du;
    numel = numel == 0 ? 0 : numel * du;
  }
  const std::size_t available = bytes.size() - h.data_offset;
  ATH_CHECK(numel <= available / item, FormatError,
            "{}: truncated: the header says {} {} elements ({} bytes), the file has {} bytes of "
            "data",
            path, numel, dtype_name(descr.dtype),
            numel <= std::numeric_limits<uint64_t>::max() / item ? fmt::format("{}", numel * item)
                                                                 : std::string("too many"),
            available);
  const std::size_t nbytes = static_cast<std::size_t>(numel) * item;
  ATH_CHECK(available == nbytes, FormatError,
            "{}: {} bytes after the array's {} bytes of data (one array per .npy file)", path,
            available - nbytes, nbytes);
  const uint8_t* data = bytes.data() + h.data_offset;
  Tensor t;
  if (!h.fortran_order || shape.size() < 2) {
    t = detail::tensor_from_bytes(data, descr.dtype, shape);
  } else {
    t = empty(shape, descr.dtype);
    from_fortran_order(data, t);
  }
  if (descr.swap) byte_swap(static_cast<uint8_t*>(t.data_ptr()), t.nbytes(), item);
  if (descr.dtype == kBool) {
    // numpy reads any non-zero byte as True; a C++ bool must hold 0 or 1.
    auto* b = static_cast<uint8_t*>(t.data_ptr());
    for (std::size_t i = 0; i < nbytes; ++i) b[i] = b[i] != 0 ? 1 : 0;
  }
  return t;
}

void write_npy(const std::string& path, const Tensor& t) {
  ATH_CHECK(t.defined(), ValueError, "write_npy('{}'): the tensor is undefined", path);
  std::string descr;
  try {
    descr = npy_descr(t.dtype());
  } catch (DTypeError& e) {
    e.prepend(fmt::format("write_npy('{}'): ", path));
    throw;
  }
  const std::vector<int64_t> shape(t.shape().begin(), t.shape().end());
  const std::string header = detail::format_npy_header(descr, shape);
  AtomicFileWriter out(path);
  out.write(header.data(), header.size());
  detail::for_each_tensor_chunk(t, [&](const void* p, std::size_t n) { out.write(p, n); });
  out.commit();
}

}  // namespace ath
