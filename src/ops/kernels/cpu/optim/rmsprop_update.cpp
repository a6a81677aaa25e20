// rmsprop_update's CPU kernel: RMSprop, centered or not, with momentum.
// Memory contract: reads the gradients; writes the parameters, the steps, square_avg (and
// momentum_buffer, grad_avg) in place, each parameter's elements independently (any thread count
// gives the same bits).
#include <cmath>

#include "athanor/core/loop_hints.h"
#include "athanor/ops/optimizer_updates.h"
#include "update_loop.h"

namespace ath::optim_kernels {

namespace {

// Reads grad; reads and writes param, square_avg, grad_avg (centered), momentum_buffer.
struct RMSpropKernel {
  template <class T>
  struct Args {
    T* p;
    const T* g;
    T* sq;
    T* ga;
    T* buf;
    T gsign, wd, alpha, one_minus_alpha, eps, momentum, neg_lr;
  };
  template <class T, bool kWd, bool kCentered, bool kMomentum>
  [[gnu::always_inline]] static void run(const Args<T>& args, int64_t begin, int64_t end) {
    // Local copies, so that stores through the arrays cannot change them.
    const Args<T> a = args;
    T* __restrict pd = a.p;
    const T* __restrict gd = a.g;
    T* __restrict sqd = a.sq;
    T* __restrict gad = a.ga;
    T* __restrict bufd = a.buf;
    // The arrays are distinct tensors: no dependence between iterations.
    ATH_IVDEP
    for (int64_t i = begin; i < end; ++i) {
      const T p = pd[i];
      T g = gd[i] * a.gsign;
      if constexpr (kWd) g = std::fma(a.wd, p, g);
      const T sq = std::fma(a.one_minus_alpha * g, g, sqd[i] * a.alpha);
      sqd[i] = sq;
      T avg;
      if constexpr (kCentered) {
        const T ga = std::fma(a.one_minus_alpha, g, gad[i] * a.alpha);
        gad[i] = ga;
        avg = std::sqrt(std::fma(-ga, ga, sq));
      } else {
        avg = std::sqrt(sq);
      }
      avg = avg + a.eps;
      if constexpr (kMomentum) {
        const T b = bufd[i] * a.momentum + g / avg;
        bufd[i] = b;
        pd[i] = std::fma(a.neg_lr, b, p);
      } else {
        pd[i] = p + (a.neg_lr * g) / avg;
      }
    }
  }
};

// Lists: step, params, grads, square_avg, [momentum_buffer], [grad_avg].
void rmsprop_update_kernel(TensorSpan in, std::span<Tensor>, const RMSpropUpdateAttrs& o) {
  const UpdateLists l(in, o.lists());
  const bool momentum = o.momentum > 0;
  const int grad_avg_list = momentum ? 5 : 4;
  dispatch_update(l.at(1, 0).dtype(), [&]<class T>() {
    for (int64_t i = 0; i < l.n; ++i) {
      counter(l, 0, i) += 1;
      RMSpropKernel::Args<T> a{l.data<T>(1, i),
                               l.data<T>(2, i),
                               l.data<T>(3, i),
                               o.centered ? l.data<T>(grad_avg_list, i) : nullptr,
                               momentum ? l.data<T>(4, i) : nullptr,
                               T(o.maximize ? -1 : 1),
                               T(o.weight_decay),
                               T(o.alpha),
                               T(1 - o.alpha),
                               T(o.eps),
                               T(o.momentum),
                               T(-o.lr)};
      with_flags(
          [&]<bool kWd, bool kCentered, bool kMomentum>() {
            launch<RMSpropKernel, T, kWd, kCentered, kMomentum>(a, l.at(1, i).numel());
          },
          o.weight_decay != 0, o.centered, momentum);
    }
  });
}

}  // namespace

static KernelRegistrar<RMSpropUpdateAttrs> reg(op_rmsprop_update(), DeviceType::CPU,
                                               std::array{kFloat32, kFloat64},
                                               rmsprop_update_kernel);
static KernelRegistrar<RMSpropUpdateAttrs> reg_low(
    op_rmsprop_update(), DeviceType::CPU, kLowPrecisionTypes,
    low_precision_update<RMSpropUpdateAttrs, rmsprop_update_kernel, 1>);

}  // namespace ath::optim_kernels
