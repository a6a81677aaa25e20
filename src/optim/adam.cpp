#include "athanor/optim/adam.h"

#include "athanor/ops/optimizer_updates.h"
#include "optimizer_with.h"
#include "update_inputs.h"

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

// The update's attributes from a group's options; read again whenever a compiled step replays
// the update (a scheduler changes lr, a one-cycle policy beta1).
template <class O>
AdamUpdateAttrs adam_attrs(const O& o, bool decoupled) {
  return AdamUpdateAttrs{.lr = o.lr,
                         .beta1 = std::get<0>(o.betas),
                         .beta2 = std::get<1>(o.betas),
                         .eps = o.eps,
                         .weight_decay = o.weight_decay,
                         .amsgrad = o.amsgrad,
                         .maximize = o.maximize,
                         .decoupled = decoupled};
}

template <class O>
void adam_step(Optimizer& opt, const O& o, std::vector<Tensor>& params,
               std::vector<ParamState>& states, const std::function<AdamUpdateAttrs()>& attrs_of) {
  std::vector<detail::ParamUpdate> ups = detail::prepare_group(opt.name(), params, states);
  detail::run_update(op_adam_update(), attrs_of, ups, [&](detail::ParamUpdate& u) {
    ParamState& st = *u.state;
    std::vector<Tensor> lists{detail::counter_tensor(st, "step"), u.param, u.grad,
                              detail::state_tensor(st, u.param, "exp_avg"),
                              detail::state_tensor(st, u.param, "exp_avg_sq")};
    if (o.amsgrad) lists.push_back(detail::state_tensor(st, u.param, "max_exp_avg_sq"));
    return lists;
  });
}

}  // namespace

Adam::Adam(const std::vector<Tensor>& params, AdamOptions options)
    : Adam(one_group(params, "Adam"), options) {}

Adam::Adam(const std::vector<ParamGroup>& groups, AdamOptions options)
    : OptimizerWith("Adam", options) {
  init_groups(groups);
}

void Adam::step_group(std::size_t g) {
  adam_step(*this, options_[g], groups_[g].params, groups_[g].state,
            [this, g] { return adam_attrs(options_[g], false); });
}

AdamW::AdamW(const std::vector<Tensor>& params, AdamWOptions options)
    : AdamW(one_group(params, "AdamW"), options) {}

AdamW::AdamW(const std::vector<ParamGroup>& groups, AdamWOptions options)
    : OptimizerWith("AdamW", options) {
  init_groups(groups);
}

void AdamW::step_group(std::size_t g) {
  adam_step(*this, options_[g], groups_[g].params, groups_[g].state,
            [this, g] { return adam_attrs(options_[g], true); });
}

}  // namespace ath::optim
