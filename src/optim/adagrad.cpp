#include "athanor/optim/adagrad.h"

#include "athanor/ops/optimizer_updates.h"
#include "optimizer_with.h"
#include "update_inputs.h"

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
    detail::counter_tensor(st, "step");
    detail::state_tensor(st, grp.params[i], "sum", options_[g].initial_accumulator_value);
  }
}

void Adagrad::step_group(std::size_t g) {
  const AdagradOptions& o = options_[g];
  Group& grp = groups_[g];
  std::vector<detail::ParamUpdate> ups = detail::prepare_group(name(), grp.params, grp.state);
  // Read again whenever a compiled step replays the update (a scheduler changes lr).
  auto attrs_of = [this, g] {
    const AdagradOptions& opts = options_[g];
    return AdagradUpdateAttrs{.lr = opts.lr,
                              .lr_decay = opts.lr_decay,
                              .weight_decay = opts.weight_decay,
                              .eps = opts.eps,
                              .maximize = opts.maximize};
  };
  detail::run_update(op_adagrad_update(), attrs_of, ups, [&](detail::ParamUpdate& u) {
    ParamState& st = *u.state;
    // Normally made with the group; recreated if a loaded state dict had none for this param.
    return std::vector<Tensor>{
        detail::counter_tensor(st, "step"), u.param, u.grad,
        detail::state_tensor(st, u.param, "sum", o.initial_accumulator_value)};
  });
}

}  // namespace ath::optim
