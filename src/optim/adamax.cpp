#include "athanor/optim/adamax.h"

#include "athanor/ops/optimizer_updates.h"
#include "optimizer_with.h"
#include "update_inputs.h"

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

Adamax::Adamax(const std::vector<Tensor>& params, AdamaxOptions options)
    : Adamax(one_group(params, "Adamax"), options) {}

Adamax::Adamax(const std::vector<ParamGroup>& groups, AdamaxOptions options)
    : OptimizerWith("Adamax", options) {
  init_groups(groups);
}

void Adamax::step_group(std::size_t g) {
  Group& grp = groups_[g];
  std::vector<detail::ParamUpdate> ups = detail::prepare_group(name(), grp.params, grp.state);
  // Read again whenever a compiled step replays the update (a scheduler changes lr).
  auto attrs_of = [this, g] {
    const AdamaxOptions& opts = options_[g];
    return AdamaxUpdateAttrs{.lr = opts.lr,
                             .beta1 = std::get<0>(opts.betas),
                             .beta2 = std::get<1>(opts.betas),
                             .eps = opts.eps,
                             .weight_decay = opts.weight_decay,
                             .maximize = opts.maximize};
  };
  detail::run_update(op_adamax_update(), attrs_of, ups, [](detail::ParamUpdate& u) {
    ParamState& st = *u.state;
    return std::vector<Tensor>{detail::counter_tensor(st, "step"), u.param, u.grad,
                               detail::state_tensor(st, u.param, "exp_avg"),
                               detail::state_tensor(st, u.param, "exp_inf")};
  });
}

}  // namespace ath::optim
