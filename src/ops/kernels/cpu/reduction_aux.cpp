// CPU kernels for reduction_aux. Memory contract: pointwise — read each input
// element (eq: broadcast) once, write every output element once; no aliasing.
#include "athanor/ops/reduction_aux.h"

#include <cmath>

#include "common/pointwise_loop.h"
#include "common/register.h"

namespace ath::kernels {

namespace {

template <class T>
void aux_kernel(TensorSpan in, std::span<Tensor> out, const AuxAttrs& a) {
  using C = compute_t<T>;
  const C q = static_cast<C>(a.q);
  switch (a.fn) {
    case AuxFn::SignPow:
      pointwise_loop<T, T>(out[0], {&in[0]}, [q](C v) {
        return v == 0 ? C(0) : std::copysign(std::pow(std::abs(v), q), v);
      });
      break;
    case AuxFn::AbsPow:
      pointwise_loop<T, T>(out[0], {&in[0]},
                           [q](C v) { return v == 0 ? C(0) : std::pow(std::abs(v), q); });
      break;
    case AuxFn::Recip0:
      pointwise_loop<T, T>(out[0], {&in[0]}, [](C v) { return v == 0 ? C(0) : C(1) / v; });
      break;
  }
}

const bool registered = [] {
  register_cpu_floating(op_reduction_aux(), []<class T>() { return &aux_kernel<T>; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels
