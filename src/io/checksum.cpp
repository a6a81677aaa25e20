#include "athanor/io/checksum.h"

#include <fmt/format.h>
#include <zlib.h>

#include <charconv>

#include "tensor_bytes.h"

namespace ath {

namespace {
uint32_t update(uint32_t crc, const void* p, std::size_t n) {
  return static_cast<uint32_t>(::crc32_z(crc, static_cast<const Bytef*>(p), n));
}
}  // namespace

uint32_t crc32_of(const Tensor& t) {
  uint32_t crc = update(0, nullptr, 0);
  detail::for_each_tensor_chunk(t, [&](const void* p, std::size_t n) { crc = update(crc, p, n); });
  return crc;
}

uint32_t crc32_of(std::string_view bytes) {
  return update(update(0, nullptr, 0), bytes.data(), bytes.size());
}

std::string format_crc32(uint32_t crc) { return fmt::format("{:#010x}", crc); }

std::optional<uint32_t> parse_crc32(std::string_view text) {
  if (text.size() != 10 || !text.starts_with("0x")) return std::nullopt;
  uint32_t v = 0;
  const auto [end, ec] = std::from_chars(text.data() + 2, text.data() + text.size(), v, 16);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

}  // namespace ath
