#include "athanor/io/tfrecord.h"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "athanor/core/error.h"
#include "athanor/io/regular_file.h"

namespace ath {

namespace {

// Table-driven CRC-32C, reflected polynomial 0x82f63b78; event records are small, so a byte at a
// time is plenty.
constexpr std::array<uint32_t, 256> make_crc32c_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
    table[i] = c;
  }
  return table;
}
constexpr std::array<uint32_t, 256> kCrc32cTable = make_crc32c_table();

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

uint64_t get_le(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

std::string read_all(const std::string& path) {
  const int fd = open_regular_file(path, "TFRecord reader");
  std::string data;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      ATH_THROW(IOError, "TFRecord reader: cannot read '{}': {}", path, std::strerror(err));
    }
    if (n == 0) break;
    data.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return data;
}

}  // namespace

uint32_t crc32c_of(std::string_view bytes) {
  uint32_t c = ~0u;
  for (char b : bytes) c = kCrc32cTable[(c ^ static_cast<uint8_t>(b)) & 0xff] ^ (c >> 8);
  return ~c;
}

uint32_t masked_crc32c(std::string_view bytes) {
  const uint32_t crc = crc32c_of(bytes);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

std::string tfrecord(std::string_view payload) {
  std::string out;
  out.reserve(payload.size() + 16);
  put_le(out, payload.size(), 8);
  put_le(out, masked_crc32c(out), 4);
  out += payload;
  put_le(out, masked_crc32c(payload), 4);
  return out;
}

std::vector<std::string> read_tfrecords(const std::string& path) {
  const std::string data = read_all(path);
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < data.size()) {
    const std::size_t index = out.size();
    auto fault = [&](const std::string& what) {
      return FormatError(fmt::format("{}: record {} at byte {}: {}", path, index, at, what));
    };
    if (data.size() - at < 12) throw fault("truncated in its 12-byte header");
    const std::string_view header(data.data() + at, 12);
    const uint64_t length = get_le(header.data(), 8);
    if (get_le(header.data() + 8, 4) != masked_crc32c(header.substr(0, 8))) {
      throw fault("the length's CRC does not match");
    }
    if (length > data.size() - at - 12 || data.size() - at - 12 - length < 4) {
      throw fault(fmt::format("a {}-byte payload runs past the end of the file", length));
    }
    const std::string_view payload(data.data() + at + 12, length);
    if (get_le(payload.data() + length, 4) != masked_crc32c(payload)) {
      throw fault("the payload's CRC does not match");
    }
    out.emplace_back(payload);
    at += 12 + length + 4;
  }
  return out;
}

}  // namespace ath
