#include "tensor_bytes.h"

#include <cstring>
#include <vector>

namespace ath::detail {

void for_each_tensor_chunk(const Tensor& t,
                           const std::function<void(const void*, std::size_t)>& sink) {
  const std::size_t nbytes = t.nbytes();
  if (nbytes == 0) return;
  if (t.is_contiguous()) {
    sink(t.data_ptr(), nbytes);
    return;
  }
  // Walk the rows (the last dim) with an index counter over the outer dims.
  const std::size_t item = t.element_size();
  const int64_t ndim = t.dim();
  const int64_t row_len = t.size(-1), row_stride = t.stride(-1);
  const std::size_t row_bytes = static_cast<std::size_t>(row_len) * item;
  const int64_t rows = t.numel() / row_len;
  constexpr std::size_t kChunk = std::size_t{1} << 20;
  std::vector<uint8_t> buf;
  buf.reserve(std::max(kChunk, row_bytes));
  std::vector<int64_t> idx(static_cast<std::size_t>(ndim - 1), 0);
  const auto* base = static_cast<const uint8_t*>(t.data_ptr());
  int64_t offset = 0;  // elements, of the current row's start
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* row = base + offset * static_cast<int64_t>(item);
    std::size_t at = buf.size();
    buf.resize(at + row_bytes);
    if (row_stride == 1) {
      std::memcpy(buf.data() + at, row, row_bytes);
    } else {
      for (int64_t i = 0; i < row_len; ++i) {
        std::memcpy(buf.data() + at + static_cast<std::size_t>(i) * item,
                    row + i * row_stride * static_cast<int64_t>(item), item);
      }
    }
    if (buf.size() >= kChunk) {
      sink(buf.data(), buf.size());
      buf.clear();
    }
    for (int64_t d = ndim - 2; d >= 0; --d) {  // next row
      auto du = static_cast<std::size_t>(d);
      offset += t.stride(d);
      if (++idx[du] < t.size(d)) break;
      offset -= t.stride(d) * t.size(d);
      idx[du] = 0;
    }
  }
  if (!buf.empty()) sink(buf.data(), buf.size());
}

Tensor tensor_from_bytes(const uint8_t* bytes, DType dtype, const Shape& shape) {
  Tensor t = empty(shape, dtype);
  if (t.nbytes() > 0) std::memcpy(t.data_ptr(), bytes, t.nbytes());
  return t;
}

int64_t first_invalid_bool(const uint8_t* bytes, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    if (bytes[i] > 1) return static_cast<int64_t>(i);
  }
  return -1;
}

}  // namespace ath::detail
