#include "athanor/optim/nadam.h"

#include "athanor/ops/optimizer_updates.h"
#include "optimizer_with.h"
#include "update_inputs.h"

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

NAdam::NAdam(const std::vector<Tensor>& params, NAdamOptions options)
    : NAdam(one_group(params, "NAdam"), options) {}

NAdam::NAdam(const std::vector<ParamGroup>& groups, NAdamOptions options)
    : OptimizerWith("NAdam", options) {
  init_groups(groups);
}

void NAdam::step_group(std::size_t g) {
  Group& grp = groups_[g];
  std::vector<detail::ParamUpdate> ups = detail::prepare_group(name(), grp.params, grp.state);
  // Read again whenever a compiled step replays the update (a scheduler changes lr).
  auto attrs_of = [this, g] {
    const NAdamOptions& opts = options_[g];
    return NAdamUpdateAttrs{.lr = opts.lr,
                            .beta1 = std::get<0>(opts.betas),
                            .beta2 = std::get<1>(opts.betas),
                            .eps = opts.eps,
                            .weight_decay = opts.weight_decay,
                            .momentum_decay = opts.momentum_decay};
  };
  detail::run_update(op_nadam_update(), attrs_of, ups, [](detail::ParamUpdate& u) {
    ParamState& st = *u.state;
    const bool fresh = st.empty();
    Tensor step = detail::counter_tensor(st, "step");
    Tensor mu_product = detail::counter_tensor(st, "mu_product", fresh ? 1.0 : 0.0);
    return std::vector<Tensor>{step,
                               mu_product,
                               u.param,
                               u.grad,
                               detail::state_tensor(st, u.param, "exp_avg"),
                               detail::state_tensor(st, u.param, "exp_avg_sq")};
  });
}

}  // namespace ath::optim
