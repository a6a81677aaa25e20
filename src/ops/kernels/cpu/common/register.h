// Registering one kernel template for several dtypes:
//
//   register_cpu<float, double, BFloat16, Half>(op_relu(), []<class T>() { return &relu<T>; });
#pragma once

#include "athanor/ops/op.h"

namespace ath::kernels {

template <class... Ts, class A, class Make>
void register_cpu(const Op<A>& op, Make make, int priority = 0) {
  (KernelRegistrar<A>(op, DeviceType::CPU, std::array{cpp_to_dtype<Ts>()},
                      make.template operator()<Ts>(), priority),
   ...);
}

// Type lists for the common cases.
template <class A, class Make>
void register_cpu_floating(const Op<A>& op, Make make) {
  register_cpu<float, double, BFloat16, Half>(op, make);
}
template <class A, class Make>
void register_cpu_numeric(const Op<A>& op, Make make) {  // all but bool
  register_cpu<uint8_t, int32_t, int64_t, float, double, BFloat16, Half>(op, make);
}
template <class A, class Make>
void register_cpu_all(const Op<A>& op, Make make) {
  register_cpu<bool, uint8_t, int32_t, int64_t, float, double, BFloat16, Half>(op, make);
}

}  // namespace ath::kernels
