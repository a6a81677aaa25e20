// Formatting helpers for extra_repr(): values printed the way PyTorch's Python reprs print them,
// so an athanor model's to_string() reads like its PyTorch twin's repr.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdint>
#include <string>

#include "athanor/core/shape.h"
#include "athanor/ops/conv.h"

namespace ath::nn::detail {

inline const char* py_bool(bool v) { return v ? "True" : "False"; }

// Python's repr of a float: shortest round-trip digits, and always a '.' or an exponent
// (1.0, not 1; 1e-05).
inline std::string py_float(double v) {
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // n: nan, inf
  return s;
}

// A tuple as Python prints it: (3,) for one element, (3, 3) for more.
inline std::string py_tuple(const Shape& v) {
  if (v.size() == 1) return fmt::format("({},)", v[0]);
  return fmt::format("({})", fmt::join(v, ", "));
}

// A pooling size: PyTorch keeps what the user passed (an int or a tuple); an Int2 with equal
// halves prints as the int.
inline std::string int_or_pair(const Int2& v) {
  return v[0] == v[1] ? fmt::format("{}", v[0]) : py_tuple({v[0], v[1]});
}

}  // namespace ath::nn::detail
