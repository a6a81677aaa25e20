// Argument checks shared by the indexing and shaping op definitions (shape rules run these;
// kernels check the index values themselves).
#pragma once

#include <algorithm>
#include <string>
#include <string_view>

#include "athanor/tensor/tensor.h"

namespace ath::detail {

// torch's index ops see a 0-dim tensor as 1-D of size 1.
inline int64_t index_dims(const Tensor& t) { return std::max<int64_t>(t.dim(), 1); }
inline int64_t index_size(const Tensor& t, int64_t d) { return t.dim() == 0 ? 1 : t.shape()[d]; }

inline void check_index_dtype(const Tensor& index, bool allow_int32) {
  bool ok = index.dtype() == kInt64 || (allow_int32 && index.dtype() == kInt32);
  ATH_CHECK(ok, DTypeError, "expected an {} index tensor, got {}",
            allow_int32 ? "int64 or int32" : "int64", dtype_name(index.dtype()));
}

inline void check_dim(int64_t dim, const Tensor& t) {
  ATH_CHECK(dim >= 0 && dim < index_dims(t), IndexError,
            "dim {} is out of range for a tensor of {} dims", dim, t.dim());
}

// Runs fn, prefixing any ath::Error with `name`: for public functions that are compositions
// (stack, split, repeat, roll) rather than ops, so their errors still name them.
template <class Fn>
decltype(auto) with_name_context(std::string_view name, Fn&& fn) {
  try {
    return fn();
  } catch (Error& e) {
    std::string prefix = std::string(name) + ": ";
    if (e.message().compare(0, prefix.size(), prefix) != 0) e.prepend(prefix);
    throw;
  }
}

// normalize_dim whose IndexError names `name`.
inline int64_t normalize_dim_for(std::string_view name, int64_t dim, int64_t ndim) {
  return with_name_context(name, [&] { return normalize_dim(dim, ndim); });
}

inline void check_bool_mask(const Tensor& mask, const char* what) {
  ATH_CHECK(mask.dtype() == kBool, DTypeError, "expected a bool {}, got {}", what,
            dtype_name(mask.dtype()));
}

}  // namespace ath::detail
