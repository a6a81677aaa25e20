#include "athanor/optim/sgd.h"

#include "athanor/core/loop_hints.h"
#include "optimizer_with.h"
#include "update_loop.h"

namespace ath::optim {

template <>
struct OptionTraits<SGDOptions> {
  template <class O, class F>
  static void fields(O& o, F&& f) {
    f("lr", o.lr);
    f("momentum", o.momentum);
    f("dampening", o.dampening);
    f("weight_decay", o.weight_decay);
    f("nesterov", o.nesterov);
    f("maximize", o.maximize);
  }
  static void validate(const SGDOptions& o, std::string_view where) {
    detail::check_lr(o.lr, where);
    detail::check_non_negative(o.momentum, "momentum", where);
    detail::check_non_negative(o.weight_decay, "weight_decay", where);
    ATH_CHECK(!o.nesterov || (o.momentum > 0 && o.dampening == 0), ValueError,
              "{}: nesterov momentum requires a momentum and zero dampening (momentum {}, "
              "dampening {})",
              where, o.momentum, o.dampening);
  }
  static StateSpec state_spec(const SGDOptions&) { return {{}, {}, {"momentum_buffer"}}; }
};

template class OptimizerWith<SGDOptions>;

namespace {

// Reads grad and param; writes param and (with momentum) buf. kFirst: buf is written from the
// gradient (PyTorch's clone on the first step), not read.
struct SGDKernel {
  template <class T>
  struct Args {
    T* p;
    const T* g;
    T* buf;
    T gsign, wd, momentum, one_minus_dampening, neg_lr;
  };
  template <class T, bool kWd, bool kMomentum, bool kFirst, bool kNesterov>
  [[gnu::always_inline]] static void run(const Args<T>& args, int64_t begin, int64_t end) {
    // Local copies, so that stores through the arrays cannot change them.
    const Args<T> a = args;
    T* __restrict pd = a.p;
    const T* __restrict gd = a.g;
    T* __restrict bufd = a.buf;
    // The arrays are distinct tensors: no dependence between iterations.
    ATH_IVDEP
    for (int64_t i = begin; i < end; ++i) {
      const T p = pd[i];
      T d = gd[i] * a.gsign;
      if constexpr (kWd) d = std::fma(a.wd, p, d);
      if constexpr (kMomentum) {
        T b;
        if constexpr (kFirst)
          b = d;
        else
          b = std::fma(a.one_minus_dampening, d, bufd[i] * a.momentum);
        bufd[i] = b;
        if constexpr (kNesterov)
          d = std::fma(a.momentum, b, d);
        else
          d = b;
      }
      pd[i] = std::fma(a.neg_lr, d, p);
    }
  }
};

}  // namespace

SGD::SGD(const std::vector<Tensor>& params, SGDOptions options)
    : SGD(one_group(params, "SGD"), options) {}

SGD::SGD(const std::vector<ParamGroup>& groups, SGDOptions options)
    : OptimizerWith("SGD", options) {
  init_groups(groups);
}

void SGD::step_group(std::size_t g) {
  const SGDOptions& o = options_[g];
  Group& grp = groups_[g];
  for (std::size_t i = 0; i < grp.params.size(); ++i) {
    auto target = detail::prepare(name(), grp.params[i]);
    if (!target) continue;
    ParamState& st = grp.state[i];
    detail::check_state(st, target->param);
    const bool momentum = o.momentum != 0;
    const bool first = momentum && st.find("momentum_buffer") == nullptr;
    Tensor buf = momentum ? detail::state_tensor(st, target->param, "momentum_buffer") : Tensor();
    detail::dispatch_update(target->param, [&]<class T>() {
      SGDKernel::Args<T> a{target->param.data<T>(),
                           target->grad.data<T>(),
                           momentum ? buf.data<T>() : nullptr,
                           T(o.maximize ? -1 : 1),
                           T(o.weight_decay),
                           T(o.momentum),
                           T(1 - o.dampening),
                           T(-o.lr)};
      detail::with_flags(
          [&]<bool kWd, bool kMomentum, bool kFirst, bool kNesterov>() {
            if constexpr (kMomentum || (!kFirst && !kNesterov))
              detail::launch<SGDKernel, T, kWd, kMomentum, kFirst, kNesterov>(a, target->numel());
          },
          o.weight_decay != 0, momentum, first, momentum && o.nesterov);
    });
    if (momentum) buf.bump_version();
    target->finish();
  }
}

}  // namespace ath::optim
