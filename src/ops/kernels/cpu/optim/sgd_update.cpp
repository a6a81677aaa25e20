// sgd_update's CPU kernel: SGD with momentum, dampening, Nesterov and weight decay.
// Memory contract: reads the gradients; writes the parameters, and (with momentum) the buffers in
// place, each parameter's elements independently (any thread count gives the same bits).
#include <cmath>

#include "athanor/core/loop_hints.h"
#include "athanor/ops/optimizer_updates.h"
#include "update_loop.h"

namespace ath::optim_kernels {

namespace {

// Reads grad and param; writes param and (with momentum) buf. kFirst: buf is written from the
// gradient (PyTorch's clone on the first step), not read.
struct SGDKernel {
  template <class T>
  struct Args {
    T* p;
    const T* g;
    T* buf;
    T gsign, wd, momentum, one_minus_dampening, neg_lr;
  };
  template <class T, bool kWd, bool kMomentum, bool kFirst, bool kNesterov>
  [[gnu::always_inline]] static void run(const Args<T>& args, int64_t begin, int64_t end) {
    // Local copies, so that stores through the arrays cannot change them.
    const Args<T> a = args;
    T* __restrict pd = a.p;
    const T* __restrict gd = a.g;
    T* __restrict bufd = a.buf;
    // The arrays are distinct tensors: no dependence between iterations.
    ATH_IVDEP
    for (int64_t i = begin; i < end; ++i) {
      const T p = pd[i];
      T d = gd[i] * a.gsign;
      if constexpr (kWd) d = std::fma(a.wd, p, d);
      if constexpr (kMomentum) {
        T b;
        if constexpr (kFirst)
          b = d;
        else
          b = std::fma(a.one_minus_dampening, d, bufd[i] * a.momentum);
        bufd[i] = b;
        if constexpr (kNesterov)
          d = std::fma(a.momentum, b, d);
        else
          d = b;
      }
      pd[i] = std::fma(a.neg_lr, d, p);
    }
  }
};

// Lists: params, grads, [momentum_buffer].
void sgd_update_kernel(TensorSpan in, std::span<Tensor>, const SgdUpdateAttrs& o) {
  const UpdateLists l(in, o.lists());
  const bool momentum = o.momentum != 0;
  dispatch_update(l.at(0, 0).dtype(), [&]<class T>() {
    for (int64_t i = 0; i < l.n; ++i) {
      SGDKernel::Args<T> a{
          l.data<T>(0, i),        l.data<T>(1, i),   momentum ? l.data<T>(2, i) : nullptr,
          T(o.maximize ? -1 : 1), T(o.weight_decay), T(o.momentum),
          T(1 - o.dampening),     T(-o.lr)};
      with_flags(
          [&]<bool kWd, bool kMomentum, bool kFirst, bool kNesterov>() {
            if constexpr (kMomentum || (!kFirst && !kNesterov))
              launch<SGDKernel, T, kWd, kMomentum, kFirst, kNesterov>(a, l.at(0, i).numel());
          },
          o.weight_decay != 0, momentum, momentum && o.first, momentum && o.nesterov);
    }
  });
}

}  // namespace

static KernelRegistrar<SgdUpdateAttrs> reg(op_sgd_update(), DeviceType::CPU,
                                           std::array{kFloat32, kFloat64}, sgd_update_kernel);
static KernelRegistrar<SgdUpdateAttrs> reg_low(
    op_sgd_update(), DeviceType::CPU, kLowPrecisionTypes,
    low_precision_update<SgdUpdateAttrs, sgd_update_kernel, 0>);

}  // namespace ath::optim_kernels
