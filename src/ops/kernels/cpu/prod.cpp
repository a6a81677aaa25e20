// CPU kernel for prod: runs on reduce_loop (see its header for the memory contract and the
// fixed, thread-count-independent order).
#include "athanor/ops/reduction.h"
#include "common/reduce_loop.h"
#include "common/register.h"

namespace ath::kernels {

namespace {

template <class T>
void prod_kernel(TensorSpan in, std::span<Tensor> out, const ReduceAttrs& a) {
  using C = compute_t<T>;
  if constexpr (std::is_floating_point_v<C>) {
    reduce_loop<T, C, T>(
        in[0], a.dims, out[0], C(1), [](C x, C y) { return x * y; }, [](C v) { return v; });
  } else {  // wraps on overflow like PyTorch (unsigned arithmetic: no UB)
    reduce_loop<T, int64_t, T>(
        in[0], a.dims, out[0], int64_t{1},
        [](int64_t x, int64_t y) {
          return static_cast<int64_t>(static_cast<uint64_t>(x) * static_cast<uint64_t>(y));
        },
        [](int64_t v) { return v; });
  }
}

const bool registered = [] {
  register_cpu_numeric(op_prod(), []<class T>() { return &prod_kernel<T>; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels
