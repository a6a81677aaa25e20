#include "npy_header.h"

#include <fmt/format.h>

#include <cstring>
#include <limits>
#include <string_view>

#include "athanor/core/error.h"
#include "athanor/core/shape.h"

namespace ath::detail {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr std::size_t kAlign = 64;
// numpy.save leaves room for the growth axis' length to reach this many digits (numpy's
// GROWTH_AXIS_MAX_DIGITS), so its headers can be rewritten in place.
constexpr std::size_t kGrowthDigits = 21;

// A Python dict literal with string keys and string / bool / tuple-of-int values.
class DictParser {
 public:
  DictParser(std::string_view text, const std::string& name) : s_(text), name_(name) {}

  void parse(NpyHeader& h) {
    skip_space();
    expect('{', "the header is not a Python dict (no '{')");
    bool seen_descr = false, seen_order = false, seen_shape = false;
    for (;;) {
      skip_space();
      if (peek() == '}') break;
      const std::string key = string("a key");
      skip_space();
      expect(':', fmt::format("no ':' after the key '{}'", key));
      skip_space();
      if (key == "descr") {
        once(seen_descr, key);
        if (peek() == '[')
          fail("the descr is a list: structured (record) dtypes are not supported");
        h.descr = string("the descr");
      } else if (key == "fortran_order") {
        once(seen_order, key);
        h.fortran_order = boolean();
      } else if (key == "shape") {
        once(seen_shape, key);
        h.shape = tuple();
      } else {
        fail(
            fmt::format("unexpected key '{}' (a .npy header has 'descr', 'fortran_order' and "
                        "'shape')",
                        key));
      }
      skip_space();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      if (peek() != '}') fail(fmt::format("expected ',' or '}}' after the value of '{}'", key));
    }
    ++i_;  // '}'
    skip_space();
    if (i_ != s_.size()) fail("unexpected text after the header's dict");
    if (!seen_descr || !seen_order || !seen_shape) {
      fail(fmt::format("the header lacks the key '{}'", !seen_descr   ? "descr"
                                                        : !seen_order ? "fortran_order"
                                                                      : "shape"));
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    ATH_THROW(FormatError, "{}: bad .npy header: {} (header: {})", name_, what, excerpt());
  }
  // The header, shortened and with unprintable bytes escaped, for the error message.
  std::string excerpt() const {
    std::string out;
    for (std::size_t k = 0; k < s_.size() && k < 120; ++k) {
      const auto ch = static_cast<unsigned char>(s_[k]);
      out += ch >= 0x20 && ch < 0x7f ? std::string(1, static_cast<char>(ch))
                                     : fmt::format("\\x{:02x}", ch);
    }
    return s_.size() > 120 ? out + "..." : out;
  }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void skip_space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
      ++i_;
  }
  void expect(char c, const std::string& what) {
    if (peek() != c || i_ >= s_.size()) fail(what);
    ++i_;
  }
  void once(bool& seen, const std::string& key) {
    if (seen) fail(fmt::format("the key '{}' appears twice", key));
    seen = true;
  }
  std::string string(const char* what) {
    const char q = peek();
    if (i_ >= s_.size() || (q != '\'' && q != '"')) fail(fmt::format("{} is not a string", what));
    const std::size_t end = s_.find(q, i_ + 1);
    if (end == std::string_view::npos) fail(fmt::format("{} is an unterminated string", what));
    std::string out(s_.substr(i_ + 1, end - i_ - 1));
    if (out.find('\\') != std::string::npos) fail(fmt::format("{} has an escape sequence", what));
    i_ = end + 1;
    return out;
  }
  bool boolean() {
    if (s_.substr(i_, 4) == "True") {
      i_ += 4;
      return true;
    }
    if (s_.substr(i_, 5) == "False") {
      i_ += 5;
      return false;
    }
    fail("fortran_order is neither True nor False");
  }
  int64_t integer() {
    if (peek() == '-') fail("the shape has a negative dimension");
    uint64_t v = 0;
    const std::size_t start = i_;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
      const auto digit = static_cast<uint64_t>(s_[i_] - '0');
      if (v > (static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) - digit) / 10)
        fail("a dimension of the shape does not fit in 64 bits");
      v = v * 10 + digit;
      ++i_;
    }
    if (i_ == start) fail("the shape is not a tuple of integers");
    if (peek() == 'L') ++i_;  // Python 2's long literal, in files written by old numpy
    return static_cast<int64_t>(v);
  }
  std::vector<int64_t> tuple() {
    expect('(', "the shape is not a tuple");
    std::vector<int64_t> dims;
    for (;;) {
      skip_space();
      if (peek() == ')') break;
      if (dims.size() == kMaxDims)
        fail(fmt::format("the shape has more than {} dimensions (athanor's limit)", kMaxDims));
      dims.push_back(integer());
      skip_space();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      if (peek() != ')') fail("expected ',' or ')' in the shape");
    }
    ++i_;
    return dims;
  }

  std::string_view s_;
  const std::string& name_;
  std::size_t i_ = 0;
};

uint32_t read_le(const uint8_t* p, int n) {
  uint32_t v = 0;
  for (int k = n - 1; k >= 0; --k) v = (v << 8) | p[k];
  return v;
}

}  // namespace

NpyHeader parse_npy_header(std::span<const uint8_t> file, const std::string& name) {
  ATH_CHECK(
      file.size() >= kMagic.size() && std::memcmp(file.data(), kMagic.data(), kMagic.size()) == 0,
      FormatError, "{}: not a .npy file (it does not start with \"\\x93NUMPY\")", name);
  ATH_CHECK(file.size() >= 8, FormatError, "{}: truncated inside the .npy format version", name);
  NpyHeader h;
  h.major = file[6];
  h.minor = file[7];
  ATH_CHECK(h.major >= 1 && h.major <= 3 && h.minor == 0, FormatError,
            "{}: .npy format version {}.{} is not supported (1.0, 2.0 and 3.0 are)", name, h.major,
            h.minor);
  const int len_bytes = h.major == 1 ? 2 : 4;
  const std::size_t prefix = 8 + static_cast<std::size_t>(len_bytes);
  ATH_CHECK(file.size() >= prefix, FormatError, "{}: truncated inside the .npy header length",
            name);
  const std::size_t header_len = read_le(file.data() + 8, len_bytes);
  ATH_CHECK(header_len <= file.size() - prefix, FormatError,
            "{}: truncated: the header length says {} bytes, the file has {} after the preamble",
            name, header_len, file.size() - prefix);
  const std::string_view text(reinterpret_cast<const char*>(file.data() + prefix), header_len);
  // Versions 1.0 and 2.0 are latin-1, 3.0 UTF-8; a valid dict is ASCII outside its strings
  // either way, and the strings are compared byte for byte.
  DictParser(text, name).parse(h);
  h.data_offset = prefix + header_len;
  return h;
}

std::string format_npy_header(const std::string& descr, std::span<const int64_t> shape) {
  std::string tuple = "(";
  for (std::size_t k = 0; k < shape.size(); ++k) {
    tuple += fmt::format("{}{}", k == 0 ? "" : ", ", shape[k]);
  }
  tuple += shape.size() == 1 ? ",)" : ")";
  std::string dict =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr, tuple);
  if (!shape.empty()) {
    const std::size_t digits = fmt::formatted_size("{}", shape[0]);
    if (digits < kGrowthDigits) dict.append(kGrowthDigits - digits, ' ');
  }
  // numpy's padding: 1 to 64 spaces (a full 64 when the header is already aligned).
  auto padding = [&](std::size_t prefix) { return kAlign - (prefix + dict.size() + 1) % kAlign; };
  int major = 1;
  std::size_t prefix = 10;
  if (dict.size() + padding(prefix) + 1 > 65535) {
    major = 2;
    prefix = 12;
  }
  const std::size_t pad = padding(prefix);
  const std::size_t header_len = dict.size() + pad + 1;  // '\n' ends the header
  std::string out(kMagic);
  out += static_cast<char>(major);
  out += '\0';
  for (std::size_t k = 0; k < prefix - 8; ++k)
    out += static_cast<char>((header_len >> (8 * k)) & 0xff);
  out += dict;
  out.append(pad, ' ');
  out += '\n';
  return out;
}

}  // namespace ath::detail
