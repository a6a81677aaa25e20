#include "athanor/optim/rmsprop.h"

#include "athanor/core/loop_hints.h"
#include "optimizer_with.h"
#include "update_loop.h"

namespace ath::optim {

template <>
struct OptionTraits<RMSpropOptions> {
  template <class O, class F>
  static void fields(O& o, F&& f) {
    f("lr", o.lr);
    f("momentum", o.momentum);
    f("alpha", o.alpha);
    f("eps", o.eps);
    f("centered", o.centered);
    f("weight_decay", o.weight_decay);
    f("maximize", o.maximize);
  }
  static void validate(const RMSpropOptions& o, std::string_view where) {
    detail::check_lr(o.lr, where);
    detail::check_non_negative(o.eps, "epsilon", where);
    detail::check_non_negative(o.momentum, "momentum", where);
    detail::check_non_negative(o.weight_decay, "weight_decay", where);
    detail::check_non_negative(o.alpha, "alpha", where);
  }
  static StateSpec state_spec(const RMSpropOptions&) {
    return {{"step"}, {"square_avg"}, {"momentum_buffer", "grad_avg"}};
  }
};

template class OptimizerWith<RMSpropOptions>;

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

}  // namespace

RMSprop::RMSprop(const std::vector<Tensor>& params, RMSpropOptions options)
    : RMSprop(one_group(params, "RMSprop"), options) {}

RMSprop::RMSprop(const std::vector<ParamGroup>& groups, RMSpropOptions options)
    : OptimizerWith("RMSprop", options) {
  init_groups(groups);
}

void RMSprop::step_group(std::size_t g) {
  const RMSpropOptions& o = options_[g];
  Group& grp = groups_[g];
  const bool momentum = o.momentum > 0;
  for (std::size_t i = 0; i < grp.params.size(); ++i) {
    auto target = detail::prepare(name(), grp.params[i]);
    if (!target) continue;
    ParamState& st = grp.state[i];
    detail::check_state(st, target->param);
    st.scalars["step"] += 1;
    Tensor sq = detail::state_tensor(st, target->param, "square_avg");
    Tensor buf = momentum ? detail::state_tensor(st, target->param, "momentum_buffer") : Tensor();
    Tensor ga = o.centered ? detail::state_tensor(st, target->param, "grad_avg") : Tensor();
    detail::dispatch_update(target->param, [&]<class T>() {
      RMSpropKernel::Args<T> a{target->param.data<T>(),
                               target->grad.data<T>(),
                               sq.data<T>(),
                               o.centered ? ga.data<T>() : nullptr,
                               momentum ? buf.data<T>() : nullptr,
                               T(o.maximize ? -1 : 1),
                               T(o.weight_decay),
                               T(o.alpha),
                               T(1 - o.alpha),
                               T(o.eps),
                               T(o.momentum),
                               T(-o.lr)};
      detail::with_flags(
          [&]<bool kWd, bool kCentered, bool kMomentum>() {
            detail::launch<RMSpropKernel, T, kWd, kCentered, kMomentum>(a, target->numel());
          },
          o.weight_decay != 0, o.centered, momentum);
    });
    sq.bump_version();
    if (momentum) buf.bump_version();
    if (o.centered) ga.bump_version();
    target->finish();
  }
}

}  // namespace ath::optim
