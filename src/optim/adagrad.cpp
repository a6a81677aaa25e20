#include "athanor/optim/adagrad.h"

#include "athanor/core/loop_hints.h"
#include "optimizer_with.h"
#include "update_loop.h"

namespace ath::optim {

template <>
struct OptionTraits<AdagradOptions> {
  template <class O, class F>
  static void fields(O& o, F&& f) {
    f("lr", o.lr);
    f("lr_decay", o.lr_decay);
    f("eps", o.eps);
    f("weight_decay", o.weight_decay);
    f("initial_accumulator_value", o.initial_accumulator_value);
    f("maximize", o.maximize);
  }
  static void validate(const AdagradOptions& o, std::string_view where) {
    detail::check_lr(o.lr, where);
    detail::check_non_negative(o.lr_decay, "lr_decay", where);
    detail::check_non_negative(o.weight_decay, "weight_decay", where);
    detail::check_non_negative(o.initial_accumulator_value, "initial_accumulator_value", where);
    detail::check_non_negative(o.eps, "epsilon", where);
  }
  static StateSpec state_spec(const AdagradOptions&) { return {{"step"}, {"sum"}, {}}; }
};

template class OptimizerWith<AdagradOptions>;

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

}  // namespace

Adagrad::Adagrad(const std::vector<Tensor>& params, AdagradOptions options)
    : Adagrad(one_group(params, "Adagrad"), options) {}

Adagrad::Adagrad(const std::vector<ParamGroup>& groups, AdagradOptions options)
    : OptimizerWith("Adagrad", options) {
  init_groups(groups);
}

void Adagrad::on_group_added(std::size_t g) {
  Group& grp = groups_[g];
  for (std::size_t i = 0; i < grp.params.size(); ++i) {
    ParamState& st = grp.state[i];
    st.scalars["step"] = 0;
    detail::state_tensor(st, grp.params[i], "sum", options_[g].initial_accumulator_value);
  }
}

void Adagrad::step_group(std::size_t g) {
  const AdagradOptions& o = options_[g];
  Group& grp = groups_[g];
  for (std::size_t i = 0; i < grp.params.size(); ++i) {
    auto target = detail::prepare(name(), grp.params[i]);
    if (!target) continue;
    ParamState& st = grp.state[i];
    detail::check_state(st, target->param);
    const double step = (st.scalars["step"] += 1);
    // Normally made with the group; recreated if a loaded state dict had none for this param.
    Tensor sum = detail::state_tensor(st, target->param, "sum", o.initial_accumulator_value);
    const double clr = o.lr / (1 + (step - 1) * o.lr_decay);
    detail::dispatch_update(target->param, [&]<class T>() {
      AdagradKernel::Args<T> a{target->param.data<T>(),
                               target->grad.data<T>(),
                               sum.data<T>(),
                               T(o.maximize ? -1 : 1),
                               T(o.weight_decay),
                               T(o.eps),
                               T(-clr)};
      detail::with_flags(
          [&]<bool kWd>() { detail::launch<AdagradKernel, T, kWd>(a, target->numel()); },
          o.weight_decay != 0);
    });
    sum.bump_version();
    target->finish();
  }
}

}  // namespace ath::optim
