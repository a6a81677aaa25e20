// CRC-32 (zlib's, the gzip/PNG polynomial) of a tensor's bytes in row-major order — whatever its
// strides — or of a string. Checkpoints store one per tensor so that a file altered after it
// was written is refused at load instead of resuming with different weights.
//
//   #include "athanor/nn/linear.h"
//   nn::Linear fc({.in = 6, .out = 5});
//   uint32_t c = ath::crc32_of(fc.state_dict().at("weight"));
//   Tensor wt = fc.weight.t();                                  // strided: a transposed view
//   assert(ath::crc32_of(wt) == ath::crc32_of(wt.contiguous()));  // the same row-major bytes
//   assert(ath::crc32_of("123456789") == 0xcbf43926);              // zlib's check value
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "athanor/tensor/tensor.h"

namespace ath {

uint32_t crc32_of(const Tensor& t);
uint32_t crc32_of(std::string_view bytes);

// "0x1a2b3c4d": how checkpoints write a CRC; parse_crc32 reads it back (nullopt if malformed).
std::string format_crc32(uint32_t crc);
std::optional<uint32_t> parse_crc32(std::string_view text);

}  // namespace ath
