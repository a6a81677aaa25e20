// Callback state keys as Lightning writes them: the class name and a Python dict repr of the
// options that tell two instances apart, e.g.
//
//   ModelCheckpoint{'monitor': 'val_loss', 'mode': 'min', 'every_n_train_steps': 0,
//                   'every_n_epochs': 1, 'train_time_interval': None}
//
// so a checkpoint's "callbacks" section reads the same in both frameworks (Lightning's
// Callback._generate_state_key is f"{qualname}{repr(kwargs)}").
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ath::train::detail {

// A Python literal: None, an int, a str, or a datetime.timedelta given in seconds. (A plain
// struct: GCC 12 warns falsely about std::variant<..., std::string> copies at -O3.)
struct PyTimedelta {
  double seconds;
};
struct PyValue {
  enum class Kind { kNone, kInt, kStr, kTimedelta } kind = Kind::kNone;
  int64_t integer = 0;
  std::string text;
  double seconds = 0;

  PyValue() = default;
  PyValue(int64_t v) : kind(Kind::kInt), integer(v) {}              // NOLINT: implicit, a literal
  PyValue(std::string v) : kind(Kind::kStr), text(std::move(v)) {}  // NOLINT
  PyValue(const char* v) : PyValue(std::string(v)) {}               // NOLINT
  PyValue(PyTimedelta t) : kind(Kind::kTimedelta), seconds(t.seconds) {}  // NOLINT
};

// repr(str): single quotes unless the text holds ' and no ", backslash escapes for the quote,
// backslash, \n \r \t and other control characters.
inline std::string py_repr(std::string_view s) {
  const char q = (s.find('\'') != std::string_view::npos && s.find('"') == std::string_view::npos)
                     ? '"'
                     : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == q || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  out += q;
  return out;
}

// repr(datetime.timedelta(seconds=s)): days, seconds and microseconds, zero fields left out.
inline std::string py_repr(PyTimedelta t) {
  const int64_t us = std::llround(t.seconds * 1e6);
  const int64_t days = us / 86'400'000'000, secs = us / 1'000'000 % 86'400, micros = us % 1'000'000;
  std::vector<std::string> parts;
  if (days != 0) parts.push_back(fmt::format("days={}", days));
  if (secs != 0) parts.push_back(fmt::format("seconds={}", secs));
  if (micros != 0) parts.push_back(fmt::format("microseconds={}", micros));
  return parts.empty() ? "datetime.timedelta(0)"
                       : fmt::format("datetime.timedelta({})", fmt::join(parts, ", "));
}

inline std::string py_repr(const PyValue& v) {
  switch (v.kind) {
    case PyValue::Kind::kNone:
      return "None";
    case PyValue::Kind::kInt:
      return std::to_string(v.integer);
    case PyValue::Kind::kStr:
      return py_repr(std::string_view(v.text));
    case PyValue::Kind::kTimedelta:
      break;
  }
  return py_repr(PyTimedelta{v.seconds});
}

inline std::string lightning_state_key(std::string_view class_name,
                                       const std::vector<std::pair<std::string, PyValue>>& kwargs) {
  std::string out = std::string(class_name) + "{";
  for (std::size_t i = 0; i < kwargs.size(); ++i) {
    if (i > 0) out += ", ";
    out += py_repr(std::string_view(kwargs[i].first)) + ": " + py_repr(kwargs[i].second);
  }
  return out + "}";
}

}  // namespace ath::train::detail
