// adamax_update's CPU kernel: Adamax (Adam with the infinity norm).
// Memory contract: reads the gradients; writes the parameters, the steps, exp_avg and exp_inf in
// place, each parameter's elements independently (any thread count gives the same bits).
#include <cmath>

#include "athanor/core/loop_hints.h"
#include "athanor/ops/optimizer_updates.h"
#include "update_loop.h"

namespace ath::optim_kernels {

namespace {

// Reads grad; reads and writes param, exp_avg and exp_inf.
struct AdamaxKernel {
  template <class T>
  struct Args {
    T* p;
    const T* g;
    T* m;
    T* u;
    T gsign, wd, beta1, one_minus_beta1, beta2, eps, neg_clr;
  };
  template <class T, bool kWd>
  [[gnu::always_inline]] static void run(const Args<T>& args, int64_t begin, int64_t end) {
    // Local copies, so that stores through the arrays cannot change them.
    const Args<T> a = args;
    T* __restrict pd = a.p;
    const T* __restrict gd = a.g;
    T* __restrict md = a.m;
    T* __restrict ud = a.u;
    // The arrays are distinct tensors: no dependence between iterations.
    ATH_IVDEP
    for (int64_t i = begin; i < end; ++i) {
      const T p = pd[i];
      T g = gd[i] * a.gsign;
      if constexpr (kWd) g = std::fma(a.wd, p, g);
      const T m = std::fma(a.one_minus_beta1, g, md[i] * a.beta1);
      const T u = nan_max(ud[i] * a.beta2, std::abs(g) + a.eps);
      md[i] = m;
      ud[i] = u;
      pd[i] = p + (a.neg_clr * m) / u;
    }
  }
};

// Lists: step, params, grads, exp_avg, exp_inf.
void adamax_update_kernel(TensorSpan in, std::span<Tensor>, const AdamaxUpdateAttrs& o) {
  const UpdateLists l(in, o.lists());
  dispatch_update(l.at(1, 0).dtype(), [&]<class T>() {
    for (int64_t i = 0; i < l.n; ++i) {
      const double step = (counter(l, 0, i) += 1);
      const double clr = o.lr / (1 - std::pow(o.beta1, step));
      AdamaxKernel::Args<T> a{l.data<T>(1, i),
                              l.data<T>(2, i),
                              l.data<T>(3, i),
                              l.data<T>(4, i),
                              T(o.maximize ? -1 : 1),
                              T(o.weight_decay),
                              T(o.beta1),
                              T(1 - o.beta1),
                              T(o.beta2),
                              T(o.eps),
                              T(-clr)};
      with_flags([&]<bool kWd>() { launch<AdamaxKernel, T, kWd>(a, l.at(1, i).numel()); },
                 o.weight_decay != 0);
    }
  });
}

}  // namespace

static KernelRegistrar<AdamaxUpdateAttrs> reg(op_adamax_update(), DeviceType::CPU,
                                              std::array{kFloat32, kFloat64}, adamax_update_kernel);
static KernelRegistrar<AdamaxUpdateAttrs> reg_low(
    op_adamax_update(), DeviceType::CPU, kLowPrecisionTypes,
    low_precision_update<AdamaxUpdateAttrs, adamax_update_kernel, 1>);

}  // namespace ath::optim_kernels
