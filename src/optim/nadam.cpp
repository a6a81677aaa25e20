#include "athanor/optim/nadam.h"

#include "athanor/core/loop_hints.h"
#include "optimizer_with.h"
#include "update_loop.h"

namespace ath::optim {

template <>
struct OptionTraits<NAdamOptions> {
  template <class O, class F>
  static void fields(O& o, F&& f) {
    f("lr", o.lr);
    f("betas", o.betas);
    f("eps", o.eps);
    f("weight_decay", o.weight_decay);
    f("momentum_decay", o.momentum_decay);
  }
  static void validate(const NAdamOptions& o, std::string_view where) {
    detail::check_lr(o.lr, where);
    detail::check_non_negative(o.eps, "epsilon", where);
    detail::check_betas(o.betas, where);
    detail::check_non_negative(o.weight_decay, "weight_decay", where);
    detail::check_non_negative(o.momentum_decay, "momentum_decay", where);
  }
  static StateSpec state_spec(const NAdamOptions&) {
    return {{"step", "mu_product"}, {"exp_avg", "exp_avg_sq"}, {}};
  }
};

template class OptimizerWith<NAdamOptions>;

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

}  // namespace

NAdam::NAdam(const std::vector<Tensor>& params, NAdamOptions options)
    : NAdam(one_group(params, "NAdam"), options) {}

NAdam::NAdam(const std::vector<ParamGroup>& groups, NAdamOptions options)
    : OptimizerWith("NAdam", options) {
  init_groups(groups);
}

void NAdam::step_group(std::size_t g) {
  const NAdamOptions& o = options_[g];
  Group& grp = groups_[g];
  for (std::size_t i = 0; i < grp.params.size(); ++i) {
    auto target = detail::prepare(name(), grp.params[i]);
    if (!target) continue;
    ParamState& st = grp.state[i];
    detail::check_state(st, target->param);
    if (st.empty()) st.scalars["mu_product"] = 1.0;
    const double step = (st.scalars["step"] += 1);
    Tensor m = detail::state_tensor(st, target->param, "exp_avg");
    Tensor v = detail::state_tensor(st, target->param, "exp_avg_sq");
    // Named copies, not a structured binding: the kernel lambda captures them (clang 14).
    const auto beta1 = std::get<0>(o.betas), beta2 = std::get<1>(o.betas);
    const double bias_correction2 = 1 - std::pow(beta2, step);
    const double mu = beta1 * (1. - 0.5 * std::pow(0.96, step * o.momentum_decay));
    const double mu_next = beta1 * (1. - 0.5 * std::pow(0.96, (step + 1) * o.momentum_decay));
    // PyTorch keeps mu_product in a float32 tensor: every product rounds to float.
    const float mu_product = static_cast<float>(st.scalars["mu_product"]) * static_cast<float>(mu);
    const float mu_product_next = mu_product * static_cast<float>(mu) * static_cast<float>(mu_next);
    st.scalars["mu_product"] = mu_product;
    const double c_grad = -o.lr * (1. - mu) / (1. - static_cast<double>(mu_product));
    const double c_avg = -o.lr * mu_next / (1. - static_cast<double>(mu_product_next));
    detail::dispatch_update(target->param, [&]<class T>() {
      NAdamKernel::Args<T> a{target->param.data<T>(),
                             target->grad.data<T>(),
                             m.data<T>(),
                             v.data<T>(),
                             T(o.weight_decay),
                             T(beta1),
                             T(1 - beta1),
                             T(beta2),
                             T(1 - beta2),
                             T(bias_correction2),
                             T(o.eps),
                             T(c_grad),
                             T(c_avg)};
      detail::with_flags(
          [&]<bool kWd>() { detail::launch<NAdamKernel, T, kWd>(a, target->numel()); },
          o.weight_decay != 0);
    });
    m.bump_version();
    v.bump_version();
    target->finish();
  }
}

}  // namespace ath::optim
