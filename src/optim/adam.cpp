#include "athanor/optim/adam.h"

#include "athanor/core/loop_hints.h"
#include "optimizer_with.h"
#include "update_loop.h"

namespace ath::optim {

namespace {

template <class O>
struct AdamTraits {
  template <class Opt, class F>
  static void fields(Opt& o, F&& f) {
    f("lr", o.lr);
    f("betas", o.betas);
    f("eps", o.eps);
    f("weight_decay", o.weight_decay);
    f("amsgrad", o.amsgrad);
    f("maximize", o.maximize);
  }
  static void validate(const O& o, std::string_view where) {
    detail::check_lr(o.lr, where);
    detail::check_non_negative(o.eps, "epsilon", where);
    detail::check_betas(o.betas, where);
    detail::check_non_negative(o.weight_decay, "weight_decay", where);
  }
  static StateSpec state_spec(const O&) {
    return {{"step"}, {"exp_avg", "exp_avg_sq"}, {"max_exp_avg_sq"}};
  }
};

}  // namespace

template <>
struct OptionTraits<AdamOptions> : AdamTraits<AdamOptions> {};
template <>
struct OptionTraits<AdamWOptions> : AdamTraits<AdamWOptions> {};

template class OptimizerWith<AdamOptions>;
template class OptimizerWith<AdamWOptions>;

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
        d = detail::nan_max(vmaxd[i], v);
        vmaxd[i] = d;
      }
      const T denom = std::sqrt(d) / a.bc2_sqrt + a.eps;
      pd[i] = p + (a.neg_step_size * m) / denom;
    }
  }
};

template <class O>
void adam_step(Optimizer& opt, const O& o, std::vector<Tensor>& params,
               std::vector<ParamState>& states, bool decoupled) {
  for (std::size_t i = 0; i < params.size(); ++i) {
    auto target = detail::prepare(opt.name(), params[i]);
    if (!target) continue;
    ParamState& st = states[i];
    detail::check_state(st, target->param);
    const double step = (st.scalars["step"] += 1);
    Tensor m = detail::state_tensor(st, target->param, "exp_avg");
    Tensor v = detail::state_tensor(st, target->param, "exp_avg_sq");
    Tensor vmax = o.amsgrad ? detail::state_tensor(st, target->param, "max_exp_avg_sq") : Tensor();
    // Named copies, not a structured binding: the kernel lambda captures them (clang 14).
    const auto beta1 = std::get<0>(o.betas), beta2 = std::get<1>(o.betas);
    const double bias_correction1 = 1 - std::pow(beta1, step);
    const double bias_correction2 = 1 - std::pow(beta2, step);
    const double step_size = o.lr / bias_correction1;
    detail::dispatch_update(target->param, [&]<class T>() {
      AdamKernel::Args<T> a{target->param.data<T>(),
                            target->grad.data<T>(),
                            m.data<T>(),
                            v.data<T>(),
                            o.amsgrad ? vmax.data<T>() : nullptr,
                            T(o.maximize ? -1 : 1),
                            T(o.weight_decay),
                            T(1 - o.lr * o.weight_decay),
                            T(beta1),
                            T(1 - beta1),
                            T(beta2),
                            T(1 - beta2),
                            T(std::sqrt(bias_correction2)),
                            T(o.eps),
                            T(-step_size)};
      detail::with_flags(
          [&]<bool kWd, bool kDecoupled, bool kAmsgrad>() {
            if constexpr (!(kWd && kDecoupled))
              detail::launch<AdamKernel, T, kWd, kDecoupled, kAmsgrad>(a, target->numel());
          },
          !decoupled && o.weight_decay != 0, decoupled, o.amsgrad);
    });
    m.bump_version();
    v.bump_version();
    if (o.amsgrad) vmax.bump_version();
    target->finish();
  }
}

}  // namespace

Adam::Adam(const std::vector<Tensor>& params, AdamOptions options)
    : Adam(one_group(params, "Adam"), options) {}

Adam::Adam(const std::vector<ParamGroup>& groups, AdamOptions options)
    : OptimizerWith("Adam", options) {
  init_groups(groups);
}

void Adam::step_group(std::size_t g) {
  adam_step(*this, options_[g], groups_[g].params, groups_[g].state, false);
}

AdamW::AdamW(const std::vector<Tensor>& params, AdamWOptions options)
    : AdamW(one_group(params, "AdamW"), options) {}

AdamW::AdamW(const std::vector<ParamGroup>& groups, AdamWOptions options)
    : OptimizerWith("AdamW", options) {
  init_groups(groups);
}

void AdamW::step_group(std::size_t g) {
  adam_step(*this, options_[g], groups_[g].params, groups_[g].state, true);
}

}  // namespace ath::optim
