#include "athanor/optim/rmsprop.h"

#include "athanor/ops/optimizer_updates.h"
#include "optimizer_with.h"
#include "update_inputs.h"

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

RMSprop::RMSprop(const std::vector<Tensor>& params, RMSpropOptions options)
    : RMSprop(one_group(params, "RMSprop"), options) {}

RMSprop::RMSprop(const std::vector<ParamGroup>& groups, RMSpropOptions options)
    : OptimizerWith("RMSprop", options) {
  init_groups(groups);
}

void RMSprop::step_group(std::size_t g) {
  const RMSpropOptions& o = options_[g];
  Group& grp = groups_[g];
  std::vector<detail::ParamUpdate> ups = detail::prepare_group(name(), grp.params, grp.state);
  // Read again whenever a compiled step replays the update (a scheduler changes lr).
  auto attrs_of = [this, g] {
    const RMSpropOptions& opts = options_[g];
    return RMSpropUpdateAttrs{.lr = opts.lr,
                              .alpha = opts.alpha,
                              .eps = opts.eps,
                              .weight_decay = opts.weight_decay,
                              .momentum = opts.momentum,
                              .centered = opts.centered,
                              .maximize = opts.maximize};
  };
  detail::run_update(op_rmsprop_update(), attrs_of, ups, [&](detail::ParamUpdate& u) {
    ParamState& st = *u.state;
    std::vector<Tensor> lists{detail::counter_tensor(st, "step"), u.param, u.grad,
                              detail::state_tensor(st, u.param, "square_avg")};
    if (o.momentum > 0) lists.push_back(detail::state_tensor(st, u.param, "momentum_buffer"));
    if (o.centered) lists.push_back(detail::state_tensor(st, u.param, "grad_avg"));
    return lists;
  });
}

}  // namespace ath::optim
