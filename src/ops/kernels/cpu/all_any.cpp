// CPU kernels for all and any: run on reduce_loop (see its header for the memory contract and
// the fixed, thread-count-independent order).
#include "athanor/ops/reduction.h"
#include "common/reduce_loop.h"
#include "common/register.h"

namespace ath::kernels {

namespace {

// Bytes rather than bool as the accumulator: partials live in arrays written by threads.
template <class T, bool All>
void logic_kernel(TensorSpan in, std::span<Tensor> out, const ReduceAttrs& a) {
  using C = compute_t<T>;
  auto nonzero = [](C v) { return static_cast<uint8_t>(v != C(0)); };  // NaN is nonzero
  auto finalize = [](uint8_t v) { return v != 0; };
  if constexpr (All) {
    reduce_loop<T, uint8_t, bool>(
        in[0], a.dims, out[0], uint8_t{1}, [](uint8_t x, uint8_t y) { return uint8_t(x & y); },
        finalize, nonzero);
  } else {
    reduce_loop<T, uint8_t, bool>(
        in[0], a.dims, out[0], uint8_t{0}, [](uint8_t x, uint8_t y) { return uint8_t(x | y); },
        finalize, nonzero);
  }
}

const bool registered = [] {
  register_cpu_all(op_all(), []<class T>() { return &logic_kernel<T, true>; });
  register_cpu_all(op_any(), []<class T>() { return &logic_kernel<T, false>; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels
