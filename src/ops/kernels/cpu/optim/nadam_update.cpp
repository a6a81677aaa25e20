// nadam_update's CPU kernel: NAdam (Adam with Nesterov momentum and momentum decay).
// Memory contract: reads the gradients; writes the parameters, the steps, mu_products, exp_avg and
// exp_avg_sq in place, each parameter's elements independently (any thread count gives the same
// bits).
#include <cmath>

#include "athanor/core/loop_hints.h"
#include "athanor/ops/optimizer_updates.h"
#include "update_loop.h"

namespace ath::optim_kernels {

namespace {

// Reads grad; reads and writes param, exp_avg and exp_avg_sq.
struct NAdamKernel {
  template <class T>
  struct Args {
    T* p;
    const T* g;
    T* m;
    T* v;
    T wd, beta1, one_minus_beta1, beta2, one_minus_beta2, bias_correction2, eps, c_grad, c_avg;
  };
  template <class T, bool kWd>
  [[gnu::always_inline]] static void run(const Args<T>& args, int64_t begin, int64_t end) {
    // Local copies, so that stores through the arrays cannot change them.
    const Args<T> a = args;
    T* __restrict pd = a.p;
    const T* __restrict gd = a.g;
    T* __restrict md = a.m;
    T* __restrict vd = a.v;
    // The arrays are distinct tensors: no dependence between iterations.
    ATH_IVDEP
    for (int64_t i = begin; i < end; ++i) {
      T p = pd[i];
      T g = gd[i];
      if constexpr (kWd) g = std::fma(a.wd, p, g);
      const T m = std::fma(a.one_minus_beta1, g, md[i] * a.beta1);
      const T v = std::fma(a.one_minus_beta2 * g, g, vd[i] * a.beta2);
      md[i] = m;
      vd[i] = v;
      const T denom = std::sqrt(v / a.bias_correction2) + a.eps;
      p = p + (a.c_grad * g) / denom;
      pd[i] = p + (a.c_avg * m) / denom;
    }
  }
};

// Lists: step, mu_product, params, grads, exp_avg, exp_avg_sq.
void nadam_update_kernel(TensorSpan in, std::span<Tensor>, const NAdamUpdateAttrs& o) {
  const UpdateLists l(in, o.lists());
  dispatch_update(l.at(2, 0).dtype(), [&]<class T>() {
    for (int64_t i = 0; i < l.n; ++i) {
      const double step = (counter(l, 0, i) += 1);
      const double bias_correction2 = 1 - std::pow(o.beta2, step);
      const double mu = o.beta1 * (1. - 0.5 * std::pow(0.96, step * o.momentum_decay));
      const double mu_next = o.beta1 * (1. - 0.5 * std::pow(0.96, (step + 1) * o.momentum_decay));
      // PyTorch keeps mu_product in a float32 tensor: every product rounds to float.
      double& mu_product_state = counter(l, 1, i);
      const float mu_product = static_cast<float>(mu_product_state) * static_cast<float>(mu);
      const float mu_product_next =
          mu_product * static_cast<float>(mu) * static_cast<float>(mu_next);
      mu_product_state = mu_product;
      const double c_grad = -o.lr * (1. - mu) / (1. - static_cast<double>(mu_product));
      const double c_avg = -o.lr * mu_next / (1. - static_cast<double>(mu_product_next));
      NAdamKernel::Args<T> a{
          l.data<T>(2, i), l.data<T>(3, i), l.data<T>(4, i), l.data<T>(5, i), T(o.weight_decay),
          T(o.beta1),      T(1 - o.beta1),  T(o.beta2),      T(1 - o.beta2),  T(bias_correction2),
          T(o.eps),        T(c_grad),       T(c_avg)};
      with_flags([&]<bool kWd>() { launch<NAdamKernel, T, kWd>(a, l.at(2, i).numel()); },
                 o.weight_decay != 0);
    }
  });
}

}  // namespace

static KernelRegistrar<NAdamUpdateAttrs> reg(op_nadam_update(), DeviceType::CPU,
                                             std::array{kFloat32, kFloat64}, nadam_update_kernel);
static KernelRegistrar<NAdamUpdateAttrs> reg_low(
    op_nadam_update(), DeviceType::CPU, kLowPrecisionTypes,
    low_precision_update<NAdamUpdateAttrs, nadam_update_kernel, 2>);

}  // namespace ath::optim_kernels
