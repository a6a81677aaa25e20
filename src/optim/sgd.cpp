#include "athanor/optim/sgd.h"

#include "athanor/ops/optimizer_updates.h"
#include "optimizer_with.h"
#include "update_inputs.h"

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

SGD::SGD(const std::vector<Tensor>& params, SGDOptions options)
    : SGD(one_group(params, "SGD"), options) {}

SGD::SGD(const std::vector<ParamGroup>& groups, SGDOptions options)
    : OptimizerWith("SGD", options) {
  init_groups(groups);
}

void SGD::step_group(std::size_t g) {
  const SGDOptions& o = options_[g];
  Group& grp = groups_[g];
  std::vector<detail::ParamUpdate> ups = detail::prepare_group(name(), grp.params, grp.state);
  const bool momentum = o.momentum != 0;
  // Read again whenever a compiled step replays the update (a scheduler changes lr).
  auto attrs_of = [this, g](bool first) {
    return [this, g, first] {
      const SGDOptions& opts = options_[g];
      return SgdUpdateAttrs{.lr = opts.lr,
                            .momentum = opts.momentum,
                            .dampening = opts.dampening,
                            .weight_decay = opts.weight_decay,
                            .nesterov = opts.nesterov,
                            .maximize = opts.maximize,
                            .first = first};
    };
  };
  if (!momentum) {
    detail::run_update(op_sgd_update(), attrs_of(false), ups, [](detail::ParamUpdate& u) {
      return std::vector<Tensor>{u.param, u.grad};
    });
    return;
  }
  // A new buffer takes the gradient (PyTorch's first step): one call for those, one for the rest.
  std::vector<detail::ParamUpdate> fresh, existing;
  for (detail::ParamUpdate& u : ups)
    (u.state->find("momentum_buffer") == nullptr ? fresh : existing).push_back(std::move(u));
  auto lists = [](detail::ParamUpdate& u) {
    return std::vector<Tensor>{u.param, u.grad,
                               detail::state_tensor(*u.state, u.param, "momentum_buffer")};
  };
  detail::run_update(op_sgd_update(), attrs_of(false), existing, lists);
  detail::run_update(op_sgd_update(), attrs_of(true), fresh, lists);
}

}  // namespace ath::optim
