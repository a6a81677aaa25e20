// Python's integer // and % (floor division, result with the divisor's sign), which the
// schedulers' formulas use; C++'s / and % truncate toward zero instead.
#pragma once

#include <cstdint>

namespace ath::optim::detail {

inline int64_t py_floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

inline int64_t py_mod(int64_t a, int64_t b) { return a - py_floordiv(a, b) * b; }

}  // namespace ath::optim::detail
