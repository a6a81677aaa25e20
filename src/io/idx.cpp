#include "athanor/io/idx.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "athanor/core/error.h"
#include "athanor/io/regular_file.h"

namespace ath {
namespace {

constexpr uint8_t kTypeUInt8 = 0x08;

// gzread over a file that may or may not be compressed (zlib passes raw files through).
class GzReader {
 public:
  explicit GzReader(const std::string& path) : path_(path) {
    const int fd = open_regular_file(path);
    file_ = ::gzdopen(fd, "rb");  // owns fd from here on
    if (file_ == nullptr) {
      ::close(fd);
      ATH_THROW(IOError, "cannot read '{}': out of memory", path);
    }
    ::gzbuffer(file_, 1 << 17);
  }
  ~GzReader() { ::gzclose(file_); }
  GzReader(const GzReader&) = delete;
  GzReader& operator=(const GzReader&) = delete;

  // Reads up to n bytes; fewer only at the end of the data.
  std::size_t read(uint8_t* out, std::size_t n) {
    std::size_t got = 0;
    while (got < n) {
      unsigned chunk = static_cast<unsigned>(std::min<std::size_t>(n - got, 1u << 30));
      int r = ::gzread(file_, out + got, chunk);
      if (r < 0) {
        int errnum = 0;
        const char* msg = ::gzerror(file_, &errnum);
        if (errnum == Z_ERRNO)
          ATH_THROW(IOError, "cannot read '{}': {}", path_, std::strerror(errno));
        ATH_THROW(FormatError, "{}: corrupt gzip data: {}", path_, msg);
      }
      if (r == 0) {
        // zlib reports a gzip stream cut short only through gzerror.
        int errnum = 0;
        const char* msg = ::gzerror(file_, &errnum);
        if (errnum != Z_OK) ATH_THROW(FormatError, "{}: corrupt gzip data: {}", path_, msg);
        break;
      }
      got += static_cast<std::size_t>(r);
    }
    return got;
  }

 private:
  std::string path_;
  gzFile file_ = nullptr;
};

}  // namespace

Tensor read_idx(const std::string& path) {
  GzReader in(path);
  uint8_t magic[4];
  if (in.read(magic, 4) != 4)
    ATH_THROW(FormatError, "{}: truncated inside the 4-byte IDX magic", path);
  const uint32_t magic_value = (uint32_t{magic[0]} << 24) | (uint32_t{magic[1]} << 16) |
                               (uint32_t{magic[2]} << 8) | magic[3];
  ATH_CHECK(magic[0] == 0 && magic[1] == 0 && magic[3] > 0, FormatError,
            "{}: bad magic 0x{:08x}: not an IDX file (0x00000803 images, 0x00000801 labels)", path,
            magic_value);
  ATH_CHECK(magic[2] == kTypeUInt8, FormatError,
            "{}: IDX element type 0x{:02x} (magic 0x{:08x}) is not supported: only unsigned bytes "
            "(0x08)",
            path, magic[2], magic_value);
  const int ndims = magic[3];
  ATH_CHECK(static_cast<std::size_t>(ndims) <= kMaxDims, FormatError,
            "{}: {} dims, more than athanor's limit of {}", path, ndims, kMaxDims);

  uint8_t dim_bytes[4 * kMaxDims];
  const std::size_t header = 4 * static_cast<std::size_t>(ndims);
  ATH_CHECK(in.read(dim_bytes, header) == header, FormatError,
            "{}: truncated inside the {} dims of the IDX header", path, ndims);
  // numel, and the product of the non-zero dims, must both fit int64: a zero dim does not make
  // [0, 2^32-1, 2^32-1, 2^32-1] a shape athanor can hold (its strides would overflow).
  Shape shape;
  uint64_t numel = 1, nonzero = 1;
  bool overflow = false;
  for (int d = 0; d < ndims; ++d) {
    const uint8_t* b = dim_bytes + 4 * d;
    uint64_t size = (uint64_t{b[0]} << 24) | (uint64_t{b[1]} << 16) | (uint64_t{b[2]} << 8) | b[3];
    shape.push_back(static_cast<int64_t>(size));
    if (size != 0) {
      if (nonzero > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / size) {
        overflow = true;
      } else {
        nonzero *= size;
      }
    }
    numel *= size;
  }
  ATH_CHECK(!overflow, FormatError, "{}: IDX dims {} overflow", path, to_string(shape));

  // Read in growing steps (64 KiB, doubling up to 64 MiB) rather than allocating what the
  // (untrusted) dims claim up front: a short file with huge dims costs what it holds.
  auto data = std::make_unique<std::vector<uint8_t>>();
  data->reserve(static_cast<std::size_t>(std::min<uint64_t>(numel, uint64_t{1} << 16)));
  while (data->size() < numel) {
    std::size_t at = data->size();
    const uint64_t chunk = std::clamp<uint64_t>(at, uint64_t{1} << 16, uint64_t{1} << 26);
    std::size_t step = static_cast<std::size_t>(std::min<uint64_t>(numel - at, chunk));
    data->resize(at + step);
    std::size_t got = in.read(data->data() + at, step);
    if (got < step) {
      ATH_THROW(FormatError, "{}: IDX dims {} need {} bytes of data, the file has {}: truncated?",
                path, to_string(shape), numel, at + got);
    }
  }
  uint8_t extra;
  ATH_CHECK(in.read(&extra, 1) == 0, FormatError,
            "{}: data continues past the {} bytes IDX dims {} describe", path, numel,
            to_string(shape));

  if (numel == 0) return empty(shape, kUInt8);
  // Hand the vector's memory to the tensor: no copy.
  uint8_t* p = data->data();
  auto storage = StorageImpl::wrap(
      p, numel, [owner = std::shared_ptr<std::vector<uint8_t>>(std::move(data))](void*) {});
  return Tensor(std::make_shared<TensorImpl>(std::move(storage), shape, contiguous_strides(shape),
                                             0, kUInt8));
}

}  // namespace ath
