// IDX files: the format of MNIST and Fashion-MNIST (http://yann.lecun.com/exdb/mnist/).
//
//   // [0x00 0x00 type ndims][ndims big-endian u32 sizes][the elements, row-major]
//   // images: magic 0x00000803 (unsigned bytes, 3 dims: count, rows, cols); labels: 0x00000801.
//   Tensor images = read_idx("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz");
//   assert(images.shape() == Shape({10000, 28, 28}) && images.dtype() == kUInt8);
//
// gzip-compressed files (as distributed) and raw ones are both read; the format is detected from
// the contents, not the name. Only unsigned-byte files (type 0x08) are supported.
#pragma once

#include <string>

#include "athanor/tensor/tensor.h"

namespace ath {

// A uint8 tensor with the file's dims. A missing or unreadable file is an IOError naming the path;
// bad contents (magic, dims that disagree with the data length, truncation, corrupt gzip data,
// trailing bytes, dims whose product overflows) are a FormatError naming the file.
Tensor read_idx(const std::string& path);

}  // namespace ath
