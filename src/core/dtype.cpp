#include "athanor/core/dtype.h"

namespace ath {

namespace {
constexpr int kCategoryBool = 0, kCategoryInt = 1, kCategoryFloat = 2;
int category(DType t) {
  if (t == DType::Bool) return kCategoryBool;
  return is_floating(t) ? kCategoryFloat : kCategoryInt;
}
}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  // The two 16-bit floats have no common 16-bit supertype.
  if ((a == DType::Float16 && b == DType::BFloat16) ||
      (a == DType::BFloat16 && b == DType::Float16)) {
    return DType::Float32;
  }
  int ca = category(a), cb = category(b);
  if (ca != cb) return ca > cb ? a : b;
  // Same category: the wider one. The enum is ordered by width within each category.
  return static_cast<uint8_t>(a) > static_cast<uint8_t>(b) ? a : b;
}

DType promote_with_scalar(DType tensor, ScalarKind scalar) {
  int ct = category(tensor);
  int cs = scalar == ScalarKind::Bool       ? kCategoryBool
           : scalar == ScalarKind::Integral ? kCategoryInt
                                            : kCategoryFloat;
  if (cs <= ct) return tensor;
  return cs == kCategoryInt ? DType::Int64 : DType::Float32;
}

}  // namespace ath
