#include "athanor/optim/optimizer.h"

#include <unordered_set>

#include "athanor/core/error.h"
#include "athanor/tensor/grad_mode.h"
#include "json_util.h"
#include "optimizer_with.h"

namespace ath::optim {

// ---- ParamState ---------------------------------------------------------------------------------

const Tensor* ParamState::find(std::string_view name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return &t;
  return nullptr;
}

Tensor* ParamState::find(std::string_view name) {
  return const_cast<Tensor*>(std::as_const(*this).find(name));
}

const Tensor& ParamState::tensor(std::string_view name) const {
  const Tensor* t = find(name);
  ATH_CHECK(t != nullptr, KeyError, "optimizer state has no tensor '{}'", name);
  return *t;
}

double ParamState::counter(const std::string& name) const {
  auto it = counters.find(name);
  ATH_CHECK(it != counters.end(), KeyError, "optimizer state has no counter '{}'", name);
  return it->second.item<double>();
}

// ---- ParamGroupRef ------------------------------------------------------------------------------

const std::vector<Tensor>& ParamGroupRef::params() const { return opt_->params(index_); }
double ParamGroupRef::lr() const { return opt_->lr(index_); }
void ParamGroupRef::set_lr(double lr) const { opt_->set_lr(index_, lr); }
double ParamGroupRef::momentum() const { return opt_->momentum(index_); }
void ParamGroupRef::set_momentum(double m) const { opt_->set_momentum(index_, m); }
std::optional<double> ParamGroupRef::value(const std::string& key) const {
  return opt_->group_value(index_, key);
}
void ParamGroupRef::set_value(const std::string& key, double v) const {
  opt_->set_group_value(index_, key, v);
}

// ---- Optimizer ----------------------------------------------------------------------------------

Optimizer::Optimizer(std::string name) : name_(std::move(name)) {}
Optimizer::~Optimizer() = default;

void Optimizer::init_groups(const std::vector<ParamGroup>& groups) {
  ATH_CHECK(!groups.empty(), ValueError, "{}: optimizer got an empty parameter list", name_);
  for (const ParamGroup& g : groups) add_param_group(g);
}

std::vector<ParamGroup> Optimizer::one_group(const std::vector<Tensor>& params,
                                             std::string_view optimizer) {
  ATH_CHECK(!params.empty(), ValueError, "{}: optimizer got an empty parameter list", optimizer);
  return {ParamGroup{.params = params}};
}

std::size_t Optimizer::check_group(std::size_t g) const {
  ATH_CHECK(g < groups_.size(), IndexError, "{}: parameter group {} out of range ({} groups)",
            name_, g, groups_.size());
  return g;
}

void Optimizer::add_param_group(const ParamGroup& group) {
  const std::size_t gi = groups_.size();
  std::unordered_set<const TensorImpl*> seen;
  for (const Group& g : groups_)
    for (const Tensor& p : g.params) seen.insert(p.impl());
  for (std::size_t i = 0; i < group.params.size(); ++i) {
    const Tensor& p = group.params[i];
    ATH_CHECK(p.defined(), ValueError, "{}: parameter {} of group {} is an undefined tensor", name_,
              i, gi);
    ATH_CHECK(p.is_leaf(), ValueError,
              "{}: can't optimize a non-leaf Tensor (parameter {} of group {})", name_, i, gi);
    ATH_CHECK(seen.insert(p.impl()).second, ValueError,
              "{}: parameter {} of group {} appears more than once in the optimizer", name_, i, gi);
  }
  push_options(group);  // validates; the last step that may throw
  groups_.push_back({group.params, std::vector<ParamState>(group.params.size()), {}});
  on_group_added(gi);
}

void Optimizer::step() {
  NoGradGuard no_grad;
  for (std::size_t g = 0; g < groups_.size(); ++g) step_group(g);
}

Tensor Optimizer::step(const std::function<Tensor()>& closure) {
  Tensor loss;
  {
    AutoGradMode grad_on(true);
    loss = closure();
  }
  step();
  return loss;
}

void Optimizer::zero_grad(bool set_to_none) {
  NoGradGuard no_grad;
  for (const Group& g : groups_) {
    for (const Tensor& p : g.params) {
      Tensor grad = p.grad();
      if (!grad.defined()) continue;
      if (set_to_none) {
        p.set_grad(Tensor());
      } else {
        grad.detach_();
        grad.zero_();
      }
    }
  }
}

ParamGroupRef Optimizer::param_group(std::size_t g) { return ParamGroupRef(*this, check_group(g)); }

std::vector<ParamGroupRef> Optimizer::param_groups() {
  std::vector<ParamGroupRef> out;
  for (std::size_t g = 0; g < groups_.size(); ++g) out.emplace_back(*this, g);
  return out;
}

const std::vector<Tensor>& Optimizer::params(std::size_t g) const {
  return groups_[check_group(g)].params;
}

const ParamState& Optimizer::state(std::size_t g, std::size_t i) const {
  const Group& grp = groups_[check_group(g)];
  ATH_CHECK(i < grp.params.size(), IndexError,
            "{}: parameter {} out of range in group {} ({} params)", name_, i, g,
            grp.params.size());
  return grp.state[i];
}

std::optional<double> Optimizer::group_value(std::size_t g, const std::string& key) const {
  const auto& values = groups_[check_group(g)].values;
  auto it = values.find(key);
  if (it == values.end()) return std::nullopt;
  return it->second;
}

void Optimizer::set_group_value(std::size_t g, const std::string& key, double v) {
  check_group(g);
  ATH_CHECK(key != "params" && !options_to_json(g).contains(key), ValueError,
            "{}: '{}' is an option of the group, not a free value (use set_lr / options())", name_,
            key);
  groups_[g].values[key] = v;
}

namespace detail {

nlohmann::json overrides_json(const ParamGroup& g) {
  nlohmann::json j = nlohmann::json::object();
  JsonWriter w{j};
  auto put = [&](const char* key, const auto& opt) {
    if (opt) w(key, *opt);
  };
  put("lr", g.lr);
  put("momentum", g.momentum);
  put("dampening", g.dampening);
  put("weight_decay", g.weight_decay);
  put("nesterov", g.nesterov);
  put("maximize", g.maximize);
  put("betas", g.betas);
  put("eps", g.eps);
  put("amsgrad", g.amsgrad);
  put("alpha", g.alpha);
  put("centered", g.centered);
  put("lr_decay", g.lr_decay);
  put("initial_accumulator_value", g.initial_accumulator_value);
  put("momentum_decay", g.momentum_decay);
  return j;
}

}  // namespace detail
}  // namespace ath::optim
