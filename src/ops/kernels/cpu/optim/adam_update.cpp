// adam_update's CPU kernel: Adam and AdamW (decoupled weight decay), with AMSGrad.
// Memory contract: reads the gradients; writes the parameters, the steps, exp_avg, exp_avg_sq (and
// max_exp_avg_sq) in place, each parameter's elements independently (any thread count gives the
// same bits).
#include <cmath>

#include "athanor/core/loop_hints.h"
#include "athanor/ops/optimizer_updates.h"
#include "update_loop.h"

namespace ath::optim_kernels {

namespace {

// Reads grad; reads and writes param, exp_avg, exp_avg_sq (and max_exp_avg_sq with amsgrad).
struct AdamKernel {
  template <class T>
  struct Args {
    T* p;
    const T* g;
    T* m;
    T* v;
    T* vmax;
    T gsign, wd, decay, beta1, one_minus_beta1, beta2, one_minus_beta2, bc2_sqrt, eps,
        neg_step_size;
  };
  // kWd: Adam's L2 term; kDecoupled: AdamW's p *= decay.
  template <class T, bool kWd, bool kDecoupled, bool kAmsgrad>
  [[gnu::always_inline]] static void run(const Args<T>& args, int64_t begin, int64_t end) {
    // Local copies, so that stores through the arrays cannot change them.
    const Args<T> a = args;
    T* __restrict pd = a.p;
    const T* __restrict gd = a.g;
    T* __restrict md = a.m;
    T* __restrict vd = a.v;
    T* __restrict vmaxd = a.vmax;
    // The arrays are distinct tensors: no dependence between iterations.
    ATH_IVDEP
    for (int64_t i = begin; i < end; ++i) {
      T p = pd[i];
      T g = gd[i] * a.gsign;
      if constexpr (kDecoupled) p = p * a.decay;
      if constexpr (kWd) g = std::fma(a.wd, p, g);
      const T m = std::fma(a.one_minus_beta1, g, md[i] * a.beta1);
      const T v = std::fma(a.one_minus_beta2 * g, g, vd[i] * a.beta2);
      md[i] = m;
      vd[i] = v;
      T d = v;
      if constexpr (kAmsgrad) {
        d = nan_max(vmaxd[i], v);
        vmaxd[i] = d;
      }
      const T denom = std::sqrt(d) / a.bc2_sqrt + a.eps;
      pd[i] = p + (a.neg_step_size * m) / denom;
    }
  }
};

// Lists: step, params, grads, exp_avg, exp_avg_sq, [max_exp_avg_sq].
void adam_update_kernel(TensorSpan in, std::span<Tensor>, const AdamUpdateAttrs& o) {
  const UpdateLists l(in, o.lists());
  dispatch_update(l.at(1, 0).dtype(), [&]<class T>() {
    for (int64_t i = 0; i < l.n; ++i) {
      const double step = (counter(l, 0, i) += 1);
      const double bias_correction1 = 1 - std::pow(o.beta1, step);
      const double bias_correction2 = 1 - std::pow(o.beta2, step);
      const double step_size = o.lr / bias_correction1;
      AdamKernel::Args<T> a{l.data<T>(1, i),
                            l.data<T>(2, i),
                            l.data<T>(3, i),
                            l.data<T>(4, i),
                            o.amsgrad ? l.data<T>(5, i) : nullptr,
                            T(o.maximize ? -1 : 1),
                            T(o.weight_decay),
                            T(1 - o.lr * o.weight_decay),
                            T(o.beta1),
                            T(1 - o.beta1),
                            T(o.beta2),
                            T(1 - o.beta2),
                            T(std::sqrt(bias_correction2)),
                            T(o.eps),
                            T(-step_size)};
      with_flags(
          [&]<bool kWd, bool kDecoupled, bool kAmsgrad>() {
            if constexpr (!(kWd && kDecoupled))
              launch<AdamKernel, T, kWd, kDecoupled, kAmsgrad>(a, l.at(1, i).numel());
          },
          !o.decoupled && o.weight_decay != 0, o.decoupled, o.amsgrad);
    }
  });
}

}  // namespace

static KernelRegistrar<AdamUpdateAttrs> reg(op_adam_update(), DeviceType::CPU,
                                            std::array{kFloat32, kFloat64}, adam_update_kernel);
static KernelRegistrar<AdamUpdateAttrs> reg_low(
    op_adam_update(), DeviceType::CPU, kLowPrecisionTypes,
    low_precision_update<AdamUpdateAttrs, adam_update_kernel, 1>);

}  // namespace ath::optim_kernels
