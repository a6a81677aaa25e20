// adagrad_update's CPU kernel: Adagrad with learning-rate decay.
// Memory contract: reads the gradients; writes the parameters, the steps and sums in place, each
// parameter's elements independently (any thread count gives the same bits).
#include <cmath>

#include "athanor/core/loop_hints.h"
#include "athanor/ops/optimizer_updates.h"
#include "update_loop.h"

namespace ath::optim_kernels {

namespace {

// Reads grad; reads and writes param and sum.
struct AdagradKernel {
  template <class T>
  struct Args {
    T* p;
    const T* g;
    T* sum;
    T gsign, wd, eps, neg_clr;
  };
  template <class T, bool kWd>
  [[gnu::always_inline]] static void run(const Args<T>& args, int64_t begin, int64_t end) {
    // Local copies, so that stores through the arrays cannot change them.
    const Args<T> a = args;
    T* __restrict pd = a.p;
    const T* __restrict gd = a.g;
    T* __restrict sumd = a.sum;
    // The arrays are distinct tensors: no dependence between iterations.
    ATH_IVDEP
    for (int64_t i = begin; i < end; ++i) {
      const T p = pd[i];
      T g = gd[i] * a.gsign;
      if constexpr (kWd) g = std::fma(a.wd, p, g);
      const T s = std::fma(g, g, sumd[i]);
      sumd[i] = s;
      const T std_ = std::sqrt(s) + a.eps;
      pd[i] = p + (a.neg_clr * g) / std_;
    }
  }
};

// Lists: step, params, grads, sum.
void adagrad_update_kernel(TensorSpan in, std::span<Tensor>, const AdagradUpdateAttrs& o) {
  const UpdateLists l(in, o.lists());
  dispatch_update(l.at(1, 0).dtype(), [&]<class T>() {
    for (int64_t i = 0; i < l.n; ++i) {
      const double step = (counter(l, 0, i) += 1);
      const double clr = o.lr / (1 + (step - 1) * o.lr_decay);
      AdagradKernel::Args<T> a{
          l.data<T>(1, i),   l.data<T>(2, i), l.data<T>(3, i), T(o.maximize ? -1 : 1),
          T(o.weight_decay), T(o.eps),        T(-clr)};
      with_flags([&]<bool kWd>() { launch<AdagradKernel, T, kWd>(a, l.at(1, i).numel()); },
                 o.weight_decay != 0);
    }
  });
}

}  // namespace

static KernelRegistrar<AdagradUpdateAttrs> reg(op_adagrad_update(), DeviceType::CPU,
                                               std::array{kFloat32, kFloat64},
                                               adagrad_update_kernel);
static KernelRegistrar<AdagradUpdateAttrs> reg_low(
    op_adagrad_update(), DeviceType::CPU, kLowPrecisionTypes,
    low_precision_update<AdagradUpdateAttrs, adagrad_update_kernel, 1>);

}  // namespace ath::optim_kernels
