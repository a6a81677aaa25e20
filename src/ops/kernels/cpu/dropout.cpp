// CPU kernels for dropout and dropout_backward.
//
// Memory contract. dropout: reads x once, writes y and the bool keep mask once each. Element i
// is kept when philox_uniform(seed, base, i) >= p, (seed, base) read from the op's second input;
// work is split into whole Philox blocks (4 elements each), so every element's draw is the same
// whatever the thread count. dropout_backward: out = mask ? g * scale : 0, one read of g and mask
// per output element.
#include "athanor/core/parallel.h"
#include "athanor/core/rng.h"
#include "athanor/ops/creation.h"
#include "athanor/ops/nn_functional.h"
#include "common/nn_common.h"
#include "common/pointwise_loop.h"
#include "common/register.h"

namespace ath::kernels {
namespace {

template <class T>
void dropout_kernel(TensorSpan in, std::span<Tensor> out, const DropoutAttrs& a) {
  using C = compute_t<T>;
  Tensor x = dense(in[0]);
  const int64_t n = x.numel();
  const T* xp = static_cast<const T*>(x.data_ptr());
  T* yp = static_cast<T*>(out[0].data_ptr());
  bool* mp = out[1].data<bool>();
  // Plain variables, not a structured binding: clang 14 cannot capture those in a lambda.
  const std::pair<uint64_t, uint64_t> seed_offset_values = read_philox_seed_offset(in[1]);
  const uint64_t seed = seed_offset_values.first, base = seed_offset_values.second;
  const C scale = a.p >= 1.0 ? C(0) : C(1.0 / (1.0 - a.p));
  const int64_t blocks = (n + 3) / 4;
  parallel_for(0, blocks, kPointwiseGrain / 4, [&](int64_t b, int64_t e) {
    for (int64_t blk = b; blk < e; ++blk) {
      const std::array<uint32_t, 4> words = philox4x32(seed, base + static_cast<uint64_t>(blk));
      for (int64_t k = 0; k < 4; ++k) {
        const int64_t i = blk * 4 + k;
        if (i >= n) break;
        // philox_uniform(seed, base, i), computed from the block already drawn.
        const float u = static_cast<float>(words[k] >> 8) * (1.0f / 16777216.0f);
        const bool keep = static_cast<double>(u) >= a.p;
        mp[i] = keep;
        yp[i] = keep ? T(C(xp[i]) * scale) : T(C(0));
      }
    }
  });
}

template <class T>
void dropout_backward_kernel(TensorSpan in, std::span<Tensor> out, const DropoutBackwardAttrs& a) {
  using C = compute_t<T>;
  const C scale = C(a.scale);
  pointwise_loop<T, T, bool>(out[0], {&in[0], &in[1]},
                             [scale](C g, bool keep) { return keep ? C(g * scale) : C(0); });
}

const bool registered = [] {
  register_cpu_floating(op_dropout(), []<class T>() { return &dropout_kernel<T>; });
  register_cpu_floating(op_dropout_backward(),
                        []<class T>() { return &dropout_backward_kernel<T>; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels
