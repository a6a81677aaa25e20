// Scalar: a number passed to an op (alpha, a fill value, the right side of `t * 2`), remembering
// whether it was written as bool, integer or floating so promotion follows PyTorch.
#pragma once

#include <concepts>
#include <cstdint>
#include <limits>

#include "athanor/core/dtype.h"

namespace ath {

// Floating -> integer as a defined operation for every input (C++ leaves NaN, infinities and
// values out of the target's range undefined): NaN gives 0, the rest saturate to T's range.
template <std::integral T, std::floating_point F>
constexpr T saturating_cast(F v) {
  if (v != v) return T{0};
  if (v <= static_cast<F>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
  if (v >= static_cast<F>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}

class Scalar {
 public:
  Scalar() : Scalar(int64_t{0}) {}
  Scalar(bool v) : kind_(ScalarKind::Bool), i_(v), d_(v) {}  // NOLINT: implicit like a number
  template <std::integral I>
  requires(!std::same_as<I, bool>) Scalar(I v)
      : kind_(ScalarKind::Integral),
        i_(static_cast<int64_t>(v)),  // NOLINT
        d_(static_cast<double>(v)) {}
  template <std::floating_point F>
  Scalar(F v)
      : kind_(ScalarKind::Floating), i_(saturating_cast<int64_t>(v)), d_(static_cast<double>(v)) {}

  ScalarKind kind() const { return kind_; }
  bool is_floating() const { return kind_ == ScalarKind::Floating; }
  double to_double() const { return d_; }
  int64_t to_int() const { return i_; }
  template <class T>
  T to() const {
    if constexpr (std::is_same_v<T, bool>)
      return d_ != 0;
    else if constexpr (std::is_integral_v<T>)
      return kind_ == ScalarKind::Floating ? saturating_cast<T>(d_) : static_cast<T>(i_);
    else
      return static_cast<T>(static_cast<float>(d_));
  }
  // Same kind and value (1 and 1.0 differ: they promote differently); a NaN is unequal.
  bool operator==(const Scalar&) const = default;

 private:
  ScalarKind kind_;
  int64_t i_;
  double d_;
};

template <>
inline double Scalar::to<double>() const {
  return d_;
}

}  // namespace ath
