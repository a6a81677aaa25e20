// Optimizer: the base of SGD, Adam, AdamW, RMSprop, Adagrad, Adamax and NAdam, with PyTorch's
// param groups, per-parameter state and state dicts. The update arithmetic is torch.optim 1.13's
// single-tensor form, fused into one pass per parameter (see each optimizer's header).
//
//   #include "athanor/nn/linear.h"
//   nn::Linear model({.in = 4, .out = 2});
//   Tensor x = randn({8, 4}), y = randn({8, 2});
//   optim::Adam opt(model.parameters(), {.lr = 1e-3, .weight_decay = 1e-2});
//   for (int i = 0; i < 3; ++i) { opt.zero_grad(); mse_loss(model(x), y).backward(); opt.step(); }
//
//   // Groups: options a group leaves unset fall back to the optimizer's, as in PyTorch.
//   nn::Linear body({.in = 4, .out = 8}), head({.in = 8, .out = 2});
//   optim::SGD sgd({{.params = body.parameters()}, {.params = head.parameters(), .lr = 0.1}},
//                  {.lr = 0.01, .momentum = 0.9});
//   sgd.param_group(1).set_lr(0.05);      // what schedulers do
//   sgd.options(0).momentum = 0.8;        // typed access to every option of a group
//
//   optim::OptimizerState s = opt.state_dict();  // json (options, steps) + tensors
//   optim::Adam fresh(model.parameters(), {.lr = 1e-3, .weight_decay = 1e-2});   // on resume
//   fresh.load_state_dict(s);   // validated first; throws and changes nothing on error
//   assert(fresh.state(0, 0).tensor("exp_avg").numel() == 8);   // "state.0.exp_avg" in s
//
// Parameters without a gradient are skipped (their state is not created or advanced). Float32 and
// float64 parameters are supported; float16/bfloat16 ones are refused with NotImplementedError
// (PyTorch would update them in their own precision). Sparse gradients do not exist here.
#pragma once

#include <any>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "athanor/tensor/state_dict.h"
#include "athanor/tensor/tensor.h"

namespace ath::optim {

// SGD's lr has no default (PyTorch's `required`): a group must get one from somewhere.
inline constexpr double kRequired = std::numeric_limits<double>::quiet_NaN();

using Betas = std::pair<double, double>;

// A parameter group as given by the user: its parameters and the options it sets. Options left
// unset come from the optimizer's defaults; setting one the optimizer does not have (.betas for
// SGD) is a ValueError. `.betas` takes `optim::Betas{0.9, 0.99}`.
struct ParamGroup {
  std::vector<Tensor> params;
  std::optional<double> lr;
  std::optional<double> momentum;
  std::optional<double> dampening;
  std::optional<double> weight_decay;
  std::optional<bool> nesterov;
  std::optional<bool> maximize;
  std::optional<Betas> betas;
  std::optional<double> eps;
  std::optional<bool> amsgrad;
  std::optional<double> alpha;
  std::optional<bool> centered;
  std::optional<double> lr_decay;
  std::optional<double> initial_accumulator_value;
  std::optional<double> momentum_decay;
};

// The state of one parameter: counters (named as in PyTorch: "step", "mu_product") and tensors
// ("exp_avg", "momentum_buffer", ...) in creation order. Empty until the parameter's first step.
// Counters are 0-d float64 tensors that the update ops advance in place (PyTorch keeps `step` in
// a tensor too), so a traced step reads them rather than baking a number in.
struct ParamState {
  std::map<std::string, Tensor> counters;
  std::vector<std::pair<std::string, Tensor>> tensors;

  bool empty() const { return counters.empty() && tensors.empty(); }
  double counter(const std::string& name) const;  // its value; KeyError when absent
  const Tensor* find(std::string_view name) const;
  Tensor* find(std::string_view name);
  const Tensor& tensor(std::string_view name) const;  // KeyError when absent
};

// An optimizer's state dict, shaped like PyTorch's:
//   meta = {"state": {"0": {"step": 10}, ...},
//           "param_groups": [{"lr": 0.001, "betas": [0.9, 0.999], ..., "params": [0, 1]}]}
//   tensors = {"state.0.exp_avg": ..., "state.0.exp_avg_sq": ..., ...}
// Parameters are numbered across groups in order. Scalars are json numbers (non-finite ones
// the strings "inf", "-inf", "nan"), so json + tensors round-trip exactly. The tensors share
// storage with the optimizer's state (as PyTorch's state_dict does): clone them to keep a copy
// while training goes on.
struct OptimizerState {
  nlohmann::json meta;
  StateDict tensors;
};

// How a scheduler's "momentum" maps onto an optimizer's options (OneCycleLR's cycle_momentum).
enum class MomentumKind { None, Momentum, Beta1 };

// What a parameter's state holds under some options (used to validate loaded state): scalars and
// tensors always present once the state exists, and tensors that may be present (created when an
// option asks for them).
struct StateSpec {
  std::vector<std::string> scalars;
  std::vector<std::string> tensors;
  std::vector<std::string> optional_tensors;
};

class Optimizer;

// A handle to one group, for schedulers and users: lr, the scheduler-kept values, the params.
class ParamGroupRef {
 public:
  ParamGroupRef(Optimizer& opt, std::size_t index) : opt_(&opt), index_(index) {}
  std::size_t index() const { return index_; }
  const std::vector<Tensor>& params() const;
  double lr() const;
  void set_lr(double lr) const;
  // The "momentum" option, or betas[0] for the Adam family (ValueError when neither exists).
  double momentum() const;
  void set_momentum(double m) const;
  // Values that schedulers keep in the group ("initial_lr", "max_lr", ...), saved with it.
  std::optional<double> value(const std::string& key) const;
  void set_value(const std::string& key, double v) const;

 private:
  Optimizer* opt_;
  std::size_t index_;
};

class Optimizer {
 public:
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;
  virtual ~Optimizer();

  const std::string& name() const { return name_; }

  // One update of every parameter that has a gradient, without recording autograd history.
  void step();
  // Runs closure with grad mode on (it zeroes grads, runs forward and backward and returns the
  // loss), then steps; returns the loss.
  Tensor step(const std::function<Tensor()>& closure);
  // Drops every gradient (set_to_none, PyTorch's default since 2.0), or zeroes them in place.
  void zero_grad(bool set_to_none = true);

  // Adds a group (options unset in it fall back to the defaults). A parameter may be in one
  // group only; non-leaf tensors are refused (ValueError).
  void add_param_group(const ParamGroup& group);
  std::size_t num_param_groups() const { return groups_.size(); }
  ParamGroupRef param_group(std::size_t g);
  std::vector<ParamGroupRef> param_groups();
  const std::vector<Tensor>& params(std::size_t g) const;
  // State of parameter i of group g (empty before its first step).
  const ParamState& state(std::size_t g, std::size_t i) const;

  OptimizerState state_dict() const;
  // Restores options, scheduler values and state (tensors are copied, cast to each parameter's
  // dtype). Group count, each group's parameter count, option names and types, state names and
  // shapes are checked first: a mismatch throws ValueError or KeyError naming it, and nothing
  // changes.
  void load_state_dict(const OptimizerState& state);

  // ---- the hyper-parameters schedulers drive ----------------------------------------------
  virtual double lr(std::size_t g) const = 0;
  virtual void set_lr(std::size_t g, double lr) = 0;
  virtual MomentumKind momentum_kind() const = 0;
  virtual double momentum(std::size_t g) const = 0;
  virtual void set_momentum(std::size_t g, double m) = 0;
  std::optional<double> group_value(std::size_t g, const std::string& key) const;
  void set_group_value(std::size_t g, const std::string& key, double v);

 protected:
  explicit Optimizer(std::string name);
  // Derived constructors call this with the user's groups once their defaults are set.
  void init_groups(const std::vector<ParamGroup>& groups);
  // A plain parameter list as one group (ValueError naming `optimizer` when empty).
  static std::vector<ParamGroup> one_group(const std::vector<Tensor>& params,
                                           std::string_view optimizer);
  std::size_t check_group(std::size_t g) const;

  // One group's update; runs under NoGradGuard.
  virtual void step_group(std::size_t g) = 0;
  // Called when a group is added (Adagrad creates its state here, as PyTorch does).
  virtual void on_group_added(std::size_t /*g*/) {}

  // ---- typed options, implemented by OptimizerWith<Options> ------------------------------
  virtual void push_options(const ParamGroup& overrides) = 0;
  virtual nlohmann::json options_to_json(std::size_t g) const = 0;
  // Parses and validates one group's options (KeyError / ValueError naming the key).
  virtual std::any options_from_json(const nlohmann::json& j) const = 0;
  virtual void set_options(std::size_t g, std::any options) = 0;
  virtual StateSpec state_spec(const std::any& options) const = 0;

  struct Group {
    std::vector<Tensor> params;
    std::vector<ParamState> state;
    std::map<std::string, double> values;  // scheduler-kept: initial_lr, max_lr, ...
  };
  std::vector<Group> groups_;

 private:
  std::string name_;
};

// The typed layer: per-group Options structs, their json form and validation (defined in
// src/optim/optimizer_with.h and instantiated once per Options type).
template <class Options>
class OptimizerWith : public Optimizer {
 public:
  const Options& defaults() const { return defaults_; }
  // A group's options; writes take effect at the next step (and are not re-validated).
  Options& options(std::size_t g) { return options_[check_group(g)]; }
  const Options& options(std::size_t g) const { return options_[check_group(g)]; }

  double lr(std::size_t g) const override { return options(g).lr; }
  void set_lr(std::size_t g, double lr) override { options(g).lr = lr; }
  MomentumKind momentum_kind() const override;
  double momentum(std::size_t g) const override;
  void set_momentum(std::size_t g, double m) override;

 protected:
  OptimizerWith(std::string name, Options defaults);

  void push_options(const ParamGroup& overrides) override;
  nlohmann::json options_to_json(std::size_t g) const override;
  std::any options_from_json(const nlohmann::json& j) const override;
  void set_options(std::size_t g, std::any options) override;
  StateSpec state_spec(const std::any& options) const override;

  Options defaults_;
  std::vector<Options> options_;
};

}  // namespace ath::optim
