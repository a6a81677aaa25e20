// Builds the schedulers of tests/golden/optim_sched.json (tools/golden/optim.py) by case name,
// on the same two-group optimizer the generator uses (lr 0.1 and 0.05).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "athanor/athanor.h"
#include "athanor/optim/optim.h"

namespace ath::testing {

struct SchedRig {
  std::vector<Tensor> params;
  std::unique_ptr<optim::Optimizer> opt;
  std::vector<std::unique_ptr<optim::LRScheduler>> parts;  // children first, the driver last
  std::unique_ptr<optim::ReduceLROnPlateau> plateau;

  optim::LRScheduler& sched() { return *parts.back(); }
  std::vector<double> lrs() const {
    std::vector<double> out;
    for (std::size_t g = 0; g < opt->num_param_groups(); ++g) out.push_back(opt->lr(g));
    return out;
  }
  std::vector<double> momenta() const {
    std::vector<double> out;
    for (std::size_t g = 0; g < opt->num_param_groups(); ++g) out.push_back(opt->momentum(g));
    return out;
  }
  template <class S, class... A>
  S& add(A&&... args) {
    auto s = std::make_unique<S>(*opt, std::forward<A>(args)...);
    S& ref = *s;
    parts.push_back(std::move(s));
    return ref;
  }
};

inline SchedRig make_rig(const std::string& optimizer = "SGD", double momentum = 0.0) {
  SchedRig r;
  r.params = {zeros({1}).requires_grad_(), zeros({1}).requires_grad_()};
  std::vector<optim::ParamGroup> groups = {{.params = {r.params[0]}},
                                           {.params = {r.params[1]}, .lr = 0.05}};
  if (optimizer == "Adam")
    r.opt = std::make_unique<optim::Adam>(groups, optim::AdamOptions{.lr = 0.1});
  else
    r.opt =
        std::make_unique<optim::SGD>(groups, optim::SGDOptions{.lr = 0.1, .momentum = momentum});
  return r;
}

// The scheduler of golden case `name` (attrs as written by the generator).
inline SchedRig build_case(const std::string& name, const nlohmann::json& a) {
  using namespace optim;
  auto pg = [](const nlohmann::json& j) {
    PerGroup p;
    if (j.is_array())
      p.values = j.get<std::vector<double>>();
    else
      p.values = {j.get<double>()};
    return p;
  };
  const std::string kind = a["kind"];
  if (kind == "OneCycleLR") {
    SchedRig r = make_rig(a["optimizer"], a.value("momentum", 0.0));
    OneCycleLROptions o{.max_lr = pg(a["max_lr"])};
    if (a.contains("total_steps")) o.total_steps = a["total_steps"];
    if (a.contains("epochs")) o.epochs = a["epochs"];
    if (a.contains("steps_per_epoch")) o.steps_per_epoch = a["steps_per_epoch"];
    if (a.contains("pct_start")) o.pct_start = a["pct_start"];
    if (a.contains("anneal_strategy"))
      o.anneal_strategy =
          a["anneal_strategy"] == "linear" ? AnnealStrategy::Linear : AnnealStrategy::Cos;
    if (a.contains("three_phase")) o.three_phase = a["three_phase"];
    if (a.contains("div_factor")) o.div_factor = a["div_factor"];
    if (a.contains("final_div_factor")) o.final_div_factor = a["final_div_factor"];
    if (a.contains("cycle_momentum")) o.cycle_momentum = a["cycle_momentum"];
    if (a.contains("base_momentum")) o.base_momentum = pg(a["base_momentum"]);
    if (a.contains("max_momentum")) o.max_momentum = pg(a["max_momentum"]);
    r.add<OneCycleLR>(o);
    return r;
  }
  SchedRig r = make_rig();
  if (kind == "StepLR") {
    r.add<StepLR>(StepLROptions{.step_size = a["step_size"], .gamma = a["gamma"]});
  } else if (kind == "MultiStepLR") {
    r.add<MultiStepLR>(MultiStepLROptions{.milestones = a["milestones"], .gamma = a["gamma"]});
  } else if (kind == "ExponentialLR") {
    r.add<ExponentialLR>(ExponentialLROptions{.gamma = a["gamma"]});
  } else if (kind == "CosineAnnealingLR") {
    r.add<CosineAnnealingLR>(
        CosineAnnealingLROptions{.T_max = a["T_max"], .eta_min = a["eta_min"]});
  } else if (kind == "CosineAnnealingWarmRestarts") {
    r.add<CosineAnnealingWarmRestarts>(CosineAnnealingWarmRestartsOptions{
        .T_0 = a["T_0"], .T_mult = a["T_mult"], .eta_min = a["eta_min"]});
  } else if (kind == "LinearLR") {
    r.add<LinearLR>(LinearLROptions{.start_factor = a["start_factor"],
                                    .end_factor = a["end_factor"],
                                    .total_iters = a["total_iters"]});
  } else if (kind == "ConstantLR") {
    r.add<ConstantLR>(ConstantLROptions{.factor = a["factor"], .total_iters = a["total_iters"]});
  } else if (kind == "LambdaLR") {
    if (a["fn"] == "per_group")
      r.add<LambdaLR>(std::vector<LrLambda>{[](int64_t e) { return 1.0 / double(e + 1); },
                                            [](int64_t e) { return std::pow(0.9, double(e)); }});
    else
      r.add<LambdaLR>(LrLambda([](int64_t e) { return std::pow(0.95, double(e)); }));
  } else if (kind == "PolynomialLR") {
    r.add<PolynomialLR>(PolynomialLROptions{.total_iters = a["total_iters"], .power = a["power"]});
  } else if (kind == "SequentialLR") {
    auto& warm = r.add<LinearLR>(LinearLROptions{.start_factor = 0.1, .total_iters = 4});
    auto& cos = r.add<CosineAnnealingLR>(CosineAnnealingLROptions{.T_max = 10});
    r.add<SequentialLR>(SchedulerRefs{warm, cos}, std::vector<int64_t>{5});
  } else if (kind == "SequentialLR3") {
    auto& c = r.add<ConstantLR>(ConstantLROptions{.factor = 0.5, .total_iters = 2});
    auto& e = r.add<ExponentialLR>(ExponentialLROptions{.gamma = 0.8});
    auto& s = r.add<StepLR>(StepLROptions{.step_size = 4, .gamma = 0.5});
    r.add<SequentialLR>(SchedulerRefs{c, e, s}, std::vector<int64_t>{3, 8});
  } else if (kind == "ChainedScheduler") {
    auto& c = r.add<ConstantLR>(ConstantLROptions{.factor = 0.5, .total_iters = 3});
    auto& e = r.add<ExponentialLR>(ExponentialLROptions{.gamma = 0.9});
    r.parts.push_back(std::make_unique<ChainedScheduler>(SchedulerRefs{c, e}));
  } else if (kind == "ReduceLROnPlateau") {
    ReduceLROnPlateauOptions o{
        .mode = a["mode"] == "min" ? PlateauMode::Min : PlateauMode::Max,
        .factor = a["factor"],
        .patience = a["patience"],
        .threshold = a["threshold"],
        .threshold_mode = a["threshold_mode"] == "rel" ? ThresholdMode::Rel : ThresholdMode::Abs,
        .cooldown = a["cooldown"],
        .min_lr = pg(a["min_lr"])};
    if (a.contains("eps")) o.eps = a["eps"];
    r.plateau = std::make_unique<ReduceLROnPlateau>(*r.opt, o);
  } else {
    throw std::runtime_error("unknown scheduler kind " + kind + " in case " + name);
  }
  return r;
}

}  // namespace ath::testing
