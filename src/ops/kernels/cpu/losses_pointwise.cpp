// CPU kernels for the elementwise losses and their backward ops.
//
// Memory contract. Forward: reads x, y (one shape, any strides: broadcast inputs arrive as
// expanded views, never copied) and the optional weight/pos_weight through broadcast strides,
// once per element; writes the per-element loss ('none') or one scalar. Backward: reads g
// (0-dim or x's shape), x, y, weights once per element and writes dx and/or dy once per element.
// No temporaries beyond a 256-value stack buffer per row piece. float uses the vectorizable
// exp/log of losses_simd_impl.h (within 2 ulp); float64 uses libm.
// Determinism: the flat index range splits into fixed 8192-element chunks (the unit of
// parallelism); each chunk's values are summed in double in fixed lane strips and the chunk
// partials combined in order, so a reduction does not depend on the thread count.
// binary_cross_entropy checks every input is in [0, 1] (NaN fails), as torch does.
#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "athanor/ops/losses.h"
#include "common/isa_dispatch.h"
#include "common/pointwise_loop.h"
#include "common/register.h"
#include "loss_kernel_helpers.h"

namespace ath::kernels {
namespace {

enum class Kind { Mse, L1, SmoothL1, Huber, Bce, BceLogits, KlDiv };

constexpr int num_loss_inputs(Kind k) { return k == Kind::Bce ? 3 : k == Kind::BceLogits ? 4 : 2; }

// ---- the flat walk over broadcast operands ---------------------------------------------------

template <std::size_t N>
struct Walk {
  int ndim = 0;
  std::array<int64_t, kMaxDims> sizes{};
  std::array<std::array<int64_t, kMaxDims>, N> strides{};  // innermost first; absent: 0
};

// Merges adjacent dims that every operand walks with one stride (as pointwise_loop does); the
// row-major order of `shape` is kept, so position p of the walk is flat index p of the output.
template <std::size_t N>
Walk<N> make_walk(const Shape& shape, const std::array<const Tensor*, N>& ops) {
  std::array<Strides, N> st;
  for (std::size_t k = 0; k < N; ++k) {
    st[k] = ops[k] != nullptr ? broadcast_strides(*ops[k], shape) : Strides(shape.size(), 0);
  }
  Walk<N> w;
  for (std::size_t d = shape.size(); d-- > 0;) {
    if (shape[d] == 1) continue;
    bool merge = w.ndim > 0;
    for (std::size_t k = 0; merge && k < N; ++k) {
      merge = st[k][d] == w.strides[k][w.ndim - 1] * w.sizes[w.ndim - 1];
    }
    if (merge) {
      w.sizes[w.ndim - 1] *= shape[d];
    } else {
      w.sizes[w.ndim] = shape[d];
      for (std::size_t k = 0; k < N; ++k) w.strides[k][w.ndim] = st[k][d];
      ++w.ndim;
    }
  }
  if (w.ndim == 0) {  // a single element
    w.ndim = 1;
    w.sizes[0] = 1;
  }
  return w;
}

// Whether every operand in `present` walks its rows with stride 1 (absent ones don't count).
template <std::size_t N>
bool unit_rows(const Walk<N>& w, const std::array<bool, N>& present) {
  for (std::size_t k = 0; k < N; ++k) {
    if (present[k] && w.strides[k][0] != 1 && w.sizes[0] != 1) return false;
  }
  return true;
}

double divisor(Reduction r, const Shape& x) {
  if (r == Reduction::Mean) return static_cast<double>(numel(x));
  if (r == Reduction::BatchMean) return x.empty() ? 1.0 : static_cast<double>(x[0]);
  return 1.0;
}

// One copy of the kernel bodies per ISA (see isa_dispatch.h).
namespace base {
#include "losses_pointwise_impl.h"
}  // namespace base
#if ATH_ISA_MULTI
ATH_ISA_BEGIN_AVX2
namespace avx2 {
#include "losses_pointwise_impl.h"
}  // namespace avx2
ATH_ISA_END
ATH_ISA_BEGIN_AVX512
namespace avx512 {
#include "losses_pointwise_impl.h"
}  // namespace avx512
ATH_ISA_END
#endif

template <Kind K>
void register_loss(const Op<PointwiseLossAttrs>& fwd, const Op<PointwiseLossAttrs>& bwd) {
  register_cpu_floating(fwd, []<class T>() { return &base::loss_kernel<T, K>; });
  register_cpu_floating(bwd, []<class T>() { return &base::loss_backward_kernel<T, K>; });
#if ATH_ISA_MULTI
  register_cpu<float>(
      fwd,
      []<class T>() {
        return &pick_isa<&base::loss_kernel<T, K>, &avx2::loss_kernel<T, K>,
                         &avx512::loss_kernel<T, K>, PointwiseLossAttrs>;
      },
      1);
  register_cpu<float>(
      bwd,
      []<class T>() {
        return &pick_isa<&base::loss_backward_kernel<T, K>, &avx2::loss_backward_kernel<T, K>,
                         &avx512::loss_backward_kernel<T, K>, PointwiseLossAttrs>;
      },
      1);
#endif
}

const bool registered = [] {
  register_loss<Kind::Mse>(op_mse_loss(), op_mse_loss_backward());
  register_loss<Kind::L1>(op_l1_loss(), op_l1_loss_backward());
  register_loss<Kind::SmoothL1>(op_smooth_l1_loss(), op_smooth_l1_loss_backward());
  register_loss<Kind::Huber>(op_huber_loss(), op_huber_loss_backward());
  register_loss<Kind::Bce>(op_binary_cross_entropy(), op_binary_cross_entropy_backward());
  register_loss<Kind::BceLogits>(op_binary_cross_entropy_with_logits(),
                                 op_binary_cross_entropy_with_logits_backward());
  register_loss<Kind::KlDiv>(op_kl_div(), op_kl_div_backward());
  return true;
}();

}  // namespace
}  // namespace ath::kernels
