#include "athanor/optim/adamax.h"

#include "athanor/core/loop_hints.h"
#include "optimizer_with.h"
#include "update_loop.h"

namespace ath::optim {

template <>
struct OptionTraits<AdamaxOptions> {
  template <class O, class F>
  static void fields(O& o, F&& f) {
    f("lr", o.lr);
    f("betas", o.betas);
    f("eps", o.eps);
    f("weight_decay", o.weight_decay);
    f("maximize", o.maximize);
  }
  static void validate(const AdamaxOptions& o, std::string_view where) {
    detail::check_lr(o.lr, where);
    detail::check_non_negative(o.eps, "epsilon", where);
    detail::check_betas(o.betas, where);
    detail::check_non_negative(o.weight_decay, "weight_decay", where);
  }
  static StateSpec state_spec(const AdamaxOptions&) {
    return {{"step"}, {"exp_avg", "exp_inf"}, {}};
  }
};

template class OptimizerWith<AdamaxOptions>;

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
      const T u = detail::nan_max(ud[i] * a.beta2, std::abs(g) + a.eps);
      md[i] = m;
      ud[i] = u;
      pd[i] = p + (a.neg_clr * m) / u;
    }
  }
};

}  // namespace

Adamax::Adamax(const std::vector<Tensor>& params, AdamaxOptions options)
    : Adamax(one_group(params, "Adamax"), options) {}

Adamax::Adamax(const std::vector<ParamGroup>& groups, AdamaxOptions options)
    : OptimizerWith("Adamax", options) {
  init_groups(groups);
}

void Adamax::step_group(std::size_t g) {
  const AdamaxOptions& o = options_[g];
  Group& grp = groups_[g];
  for (std::size_t i = 0; i < grp.params.size(); ++i) {
    auto target = detail::prepare(name(), grp.params[i]);
    if (!target) continue;
    ParamState& st = grp.state[i];
    detail::check_state(st, target->param);
    const double step = (st.scalars["step"] += 1);
    Tensor m = detail::state_tensor(st, target->param, "exp_avg");
    Tensor u = detail::state_tensor(st, target->param, "exp_inf");
    // Named copies, not a structured binding: the kernel lambda captures them (clang 14).
    const auto beta1 = std::get<0>(o.betas), beta2 = std::get<1>(o.betas);
    const double clr = o.lr / (1 - std::pow(beta1, step));
    detail::dispatch_update(target->param, [&]<class T>() {
      AdamaxKernel::Args<T> a{target->param.data<T>(),
                              target->grad.data<T>(),
                              m.data<T>(),
                              u.data<T>(),
                              T(o.maximize ? -1 : 1),
                              T(o.weight_decay),
                              T(beta1),
                              T(1 - beta1),
                              T(beta2),
                              T(o.eps),
                              T(-clr)};
      detail::with_flags(
          [&]<bool kWd>() { detail::launch<AdamaxKernel, T, kWd>(a, target->numel()); },
          o.weight_decay != 0);
    });
    m.bump_version();
    u.bump_version();
    target->finish();
  }
}

}  // namespace ath::optim
