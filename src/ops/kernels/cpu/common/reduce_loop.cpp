// Layout helpers for reduce_loop.h: how a reduction walks x.
#include "reduce_loop.h"

namespace ath::kernels {

namespace {
bool is_reduced(const DimList& dims, int64_t d) {
  return dims.empty() || std::find(dims.begin(), dims.end(), d) != dims.end();
}
}  // namespace

Tensor reduction_view(const Tensor& x, const DimList& dims, int64_t& m, int64_t& n) {
  DimList kept, reduced;
  for (int64_t d = 0; d < x.dim(); ++d) (is_reduced(dims, d) ? reduced : kept).push_back(d);
  Shape sizes;
  Strides strides;
  m = 1;
  n = 1;
  for (int64_t d : kept) {
    sizes.push_back(x.shape()[d]);
    strides.push_back(x.strides()[d]);
    m *= x.shape()[d];
  }
  for (int64_t d : reduced) {
    sizes.push_back(x.shape()[d]);
    strides.push_back(x.strides()[d]);
    n *= x.shape()[d];
  }
  Tensor v = make_view(x, sizes, strides, x.storage_offset());
  if (v.is_contiguous()) return v;
  return v.clone();
}

bool outer_reduction_layout(const Tensor& x, const DimList& dims, int64_t& outer, int64_t& n,
                            int64_t& inner) {
  if (!x.is_contiguous()) return false;
  outer = n = inner = 1;
  // Walk the dims that matter (size-1 dims are free to move): kept prefix, then one reduced
  // block, then kept dims only.
  enum { kPrefix, kReduced, kSuffix } phase = kPrefix;
  for (int64_t d = 0; d < x.dim(); ++d) {
    const int64_t size = x.shape()[d];
    if (size == 1) continue;
    const bool r = is_reduced(dims, d);
    if (phase == kPrefix) {
      if (r) phase = kReduced;
    } else if (phase == kReduced) {
      if (!r) phase = kSuffix;
    } else if (r) {
      return false;
    }
    (phase == kPrefix ? outer : phase == kReduced ? n : inner) *= size;
  }
  return phase == kSuffix;
}

}  // namespace ath::kernels
