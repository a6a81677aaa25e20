// CPU kernels for cross_entropy (class indices) and cross_entropy_backward.
//
// Memory contract. Forward: validates every target first (nothing is read through a bad one),
// then reads x once per position's row of C classes (max, then exp-sum and the smoothing sum
// while the row is in cache) and writes per position its lse (and its loss for 'none');
// 'mean'/'sum' write one scalar and total_weight. No [N, C] temporary: log-softmax is never
// materialized. Backward: reads x, lse and g once and writes each element of dx once:
// dx[c] = A * exp(x[c] - lse) - s2 * w[c], with dx[t] also minus s1 (see below).
// Layout: x is [outer, C, inner]; with inner == 1 a position's row is contiguous (one thread
// per block of rows); otherwise blocks of 64 adjacent positions are handled together so the
// inner loops run over contiguous memory, as in the softmax kernel.
// Determinism: positions are grouped into fixed blocks (sized from the shape only); partial
// sums are per block, in double, and combined in block order: no thread-count dependence.
// 16-bit floats compute in float; lse/total_weight are float (double for float64 input).
#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "athanor/ops/losses.h"
#include "common/isa_dispatch.h"
#include "common/register.h"
#include "loss_kernel_helpers.h"

namespace ath::kernels {
namespace {

// One copy of the kernels per ISA. The helpers they inline (lane_sum, exp_fast) are defined in
// the headers above, outside the target regions: each copy vectorizes them for its own ISA,
// and no inline function with external linkage is compiled for a wider ISA than the baseline.
namespace base {
#include "losses_cross_entropy_impl.h"
}  // namespace base
#if ATH_ISA_MULTI
ATH_ISA_BEGIN_AVX2
namespace avx2 {
#include "losses_cross_entropy_impl.h"
}  // namespace avx2
ATH_ISA_END
ATH_ISA_BEGIN_AVX512
namespace avx512 {
#include "losses_cross_entropy_impl.h"
}  // namespace avx512
ATH_ISA_END
#endif

const bool registered = [] {
  // Baseline for every dtype; float32 above it, picking its ISA copy per call.
  register_cpu_floating(op_cross_entropy(),
                        []<class T>() { return &base::cross_entropy_kernel<T>; });
  register_cpu_floating(op_cross_entropy_backward(),
                        []<class T>() { return &base::cross_entropy_backward_kernel<T>; });
#if ATH_ISA_MULTI
  register_cpu<float>(
      op_cross_entropy(),
      []<class T>() {
        return &pick_isa<&base::cross_entropy_kernel<T>, &avx2::cross_entropy_kernel<T>,
                         &avx512::cross_entropy_kernel<T>, CrossEntropyAttrs>;
      },
      1);
  register_cpu<float>(
      op_cross_entropy_backward(),
      []<class T>() {
        return &pick_isa<&base::cross_entropy_backward_kernel<T>,
                         &avx2::cross_entropy_backward_kernel<T>,
                         &avx512::cross_entropy_backward_kernel<T>, CrossEntropyAttrs>;
      },
      1);
#endif
  return true;
}();

}  // namespace
}  // namespace ath::kernels
