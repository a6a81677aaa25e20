// Raw bytes in and out of tensors, for file formats. No dispatched ops: the io layer sits on the
// tensor layer only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "athanor/tensor/tensor.h"

namespace ath::detail {

// Calls sink(data, n) with the tensor's bytes in row-major order, in one or more pieces: a
// contiguous tensor in one piece straight from its storage, any other (transposed, sliced,
// expanded) gathered through a bounded buffer.
void for_each_tensor_chunk(const Tensor& t,
                           const std::function<void(const void*, std::size_t)>& sink);

// A new contiguous tensor holding a copy of numel(shape) * element_size(dtype) bytes.
Tensor tensor_from_bytes(const uint8_t* bytes, DType dtype, const Shape& shape);

// Index of the first byte that is neither 0 nor 1 (not a valid C++ bool), or -1.
int64_t first_invalid_bool(const uint8_t* bytes, std::size_t n);

}  // namespace ath::detail
