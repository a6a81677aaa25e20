#include "athanor/core/shape.h"

#include <algorithm>

#include "athanor/core/error.h"

namespace ath {

// Shapes come from files and users: a product past int64 is a ShapeError, never an overflow. A
// zero dim does not excuse the others (their product is what the strides hold).
int64_t numel(const Shape& s) {
  int64_t n = 1;
  bool empty = false;
  for (int64_t d : s) {
    if (d == 0) {
      empty = true;
    } else if (__builtin_mul_overflow(n, d, &n)) {
      ATH_THROW(ShapeError, "shape {} has more elements than int64 can count", to_string(s));
    }
  }
  return empty ? 0 : n;
}

Strides contiguous_strides(const Shape& s) {
  Strides st(s.size());
  int64_t acc = 1;
  for (std::size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    if (__builtin_mul_overflow(acc, std::max<int64_t>(s[i], 1), &acc)) {
      ATH_THROW(ShapeError, "shape {} has more elements than int64 can count", to_string(s));
    }
  }
  return st;
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  std::size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (std::size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    ATH_CHECK(da == db || da == 1 || db == 1, ShapeError,
              "shapes {} and {} are not broadcastable (dim {}: {} vs {})", to_string(a),
              to_string(b), i, da, db);
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int64_t normalize_dim(int64_t dim, int64_t ndim) {
  int64_t range = std::max<int64_t>(ndim, 1);
  ATH_CHECK(dim >= -range && dim < range, IndexError,
            "dimension {} out of range for a {}-D tensor (expected [{}, {}])", dim, ndim, -range,
            range - 1);
  return dim < 0 ? dim + range : dim;
}

DimList normalize_dims(const DimList& dims, int64_t ndim) {
  DimList out;
  for (int64_t d : dims) {
    int64_t n = normalize_dim(d, ndim);
    ATH_CHECK(std::find(out.begin(), out.end(), n) == out.end(), IndexError,
              "dimension {} appears more than once", d);
    out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  if (ndim == 0) out.clear();  // dim 0/-1 of a scalar reduces nothing
  return out;
}

std::string to_string(const Shape& s) {
  std::string r = "[";
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i) r += ", ";
    r += std::to_string(s[i]);
  }
  return r + "]";
}

}  // namespace ath
