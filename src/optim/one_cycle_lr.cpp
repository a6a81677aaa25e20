#include "athanor/optim/one_cycle_lr.h"

#include <cmath>
#include <numbers>

#include "athanor/core/error.h"
#include "json_util.h"

namespace ath::optim {

using nlohmann::json;
namespace du = detail;

namespace {

int64_t resolve_total(const OneCycleLROptions& o) {
  if (o.total_steps != 0) {
    ATH_CHECK(o.total_steps > 0, ValueError,
              "OneCycleLR: expected positive integer total_steps, but got {}", o.total_steps);
    return o.total_steps;
  }
  ATH_CHECK(o.epochs != 0 || o.steps_per_epoch != 0, ValueError,
            "OneCycleLR: you must define either total_steps OR (epochs AND steps_per_epoch)");
  ATH_CHECK(o.epochs > 0, ValueError, "OneCycleLR: expected positive integer epochs, but got {}",
            o.epochs);
  ATH_CHECK(o.steps_per_epoch > 0, ValueError,
            "OneCycleLR: expected positive integer steps_per_epoch, but got {}", o.steps_per_epoch);
  return o.epochs * o.steps_per_epoch;
}

void check_pct(double pct) {
  ATH_CHECK(pct >= 0 && pct <= 1, ValueError,
            "OneCycleLR: expected float between 0 and 1 pct_start, but got {}", pct);
}

}  // namespace

OneCycleLR::OneCycleLR(Optimizer& opt, OneCycleLROptions o)
    : LRScheduler("OneCycleLR", opt, LRScheduler::NoInit{}),
      total_steps_(resolve_total(o)),
      pct_start_(o.pct_start),
      anneal_(o.anneal_strategy),
      three_phase_(o.three_phase),
      cycle_momentum_(o.cycle_momentum) {
  check_pct(pct_start_);
  make_phases();
  const std::size_t n = opt.num_param_groups();
  const std::vector<double> max_lrs = o.max_lr.expand(n, name_, "max_lr");
  if (o.last_epoch == -1) {
    for (std::size_t g = 0; g < n; ++g) {
      const double initial = max_lrs[g] / o.div_factor;
      opt.set_group_value(g, "initial_lr", initial);
      opt.set_group_value(g, "max_lr", max_lrs[g]);
      opt.set_group_value(g, "min_lr", initial / o.final_div_factor);
    }
  }
  if (cycle_momentum_) {
    ATH_CHECK(opt.momentum_kind() != MomentumKind::None, ValueError,
              "OneCycleLR: optimizer {} must support momentum (momentum or betas) with "
              "cycle_momentum enabled",
              opt.name());
    use_beta1_ = opt.momentum_kind() == MomentumKind::Beta1;
    const std::vector<double> max_m = o.max_momentum.expand(n, name_, "max_momentum");
    const std::vector<double> base_m = o.base_momentum.expand(n, name_, "base_momentum");
    if (o.last_epoch == -1) {
      for (std::size_t g = 0; g < n; ++g) {
        opt.set_momentum(g, max_m[g]);
        opt.set_group_value(g, "max_momentum", max_m[g]);
        opt.set_group_value(g, "base_momentum", base_m[g]);
      }
    }
  }
  // The base class's part of PyTorch's constructor: initial_lr is set above, or required.
  last_epoch_ = o.last_epoch;
  ATH_CHECK(o.last_epoch >= -1, ValueError, "OneCycleLR: last_epoch must be >= -1, got {}",
            o.last_epoch);
  for (std::size_t g = 0; g < n; ++g) {
    std::optional<double> initial = opt.group_value(g, "initial_lr");
    ATH_CHECK(initial.has_value(), KeyError,
              "OneCycleLR: param 'initial_lr' is not specified in param_groups[{}] when resuming "
              "an optimizer",
              g);
    base_lrs_.push_back(*initial);
  }
  initial_step();
}

void OneCycleLR::make_phases() {
  const double total = double(total_steps_);
  if (three_phase_) {
    phases_ = {
        {pct_start_ * total - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"},
        {2 * pct_start_ * total - 2, "max_lr", "initial_lr", "base_momentum", "max_momentum"},
        {total - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"}};
  } else {
    phases_ = {{pct_start_ * total - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"},
               {total - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"}};
  }
}

double OneCycleLR::anneal(double start, double end, double pct) const {
  if (anneal_ == AnnealStrategy::Cos) {
    const double cos_out = std::cos(std::numbers::pi * pct) + 1;
    return end + (start - end) / 2.0 * cos_out;
  }
  return (end - start) * pct + start;
}

std::vector<double> OneCycleLR::get_lr() {
  const int64_t step_num = last_epoch_;
  ATH_CHECK(step_num <= total_steps_, ValueError,
            "OneCycleLR: tried to step {} times. The specified number of total steps is {}",
            step_num + 1, total_steps_);
  auto value = [&](std::size_t g, const char* key) {
    std::optional<double> v = opt_->group_value(g, key);
    ATH_CHECK(v.has_value(), KeyError, "OneCycleLR: param group {} has no '{}'", g, key);
    return *v;
  };
  std::vector<double> lrs;
  for (std::size_t g = 0; g < num_groups(); ++g) {
    double start_step = 0, lr = 0, momentum = 0;
    for (std::size_t i = 0; i < phases_.size(); ++i) {
      const Phase& ph = phases_[i];
      if (double(step_num) <= ph.end_step || i + 1 == phases_.size()) {
        ATH_CHECK(ph.end_step != start_step, ValueError,
                  "OneCycleLR: phase {} has no length (total_steps {}, pct_start {}); PyTorch "
                  "divides by zero here",
                  i, total_steps_, pct_start_);
        const double pct = (double(step_num) - start_step) / (ph.end_step - start_step);
        lr = anneal(value(g, ph.start_lr), value(g, ph.end_lr), pct);
        if (cycle_momentum_)
          momentum = anneal(value(g, ph.start_momentum), value(g, ph.end_momentum), pct);
        break;
      }
      start_step = ph.end_step;
    }
    lrs.push_back(lr);
    if (cycle_momentum_) opt_->set_momentum(g, momentum);
  }
  return lrs;
}

void OneCycleLR::save_fields(json& out) const {
  out["total_steps"] = total_steps_;
  out["pct_start"] = du::number_json(pct_start_);
  out["anneal_strategy"] = anneal_ == AnnealStrategy::Cos ? "cos" : "linear";
  out["three_phase"] = three_phase_;
  out["cycle_momentum"] = cycle_momentum_;
  out["use_beta1"] = use_beta1_;
}

void OneCycleLR::load_fields(const json& in) {
  int64_t total = du::read_int(in, "total_steps", name_);
  double pct = du::read_number(in, "pct_start", name_);
  std::string anneal = du::read_string(in, "anneal_strategy", name_);
  bool three = du::read_bool(in, "three_phase", name_);
  bool cycle = du::read_bool(in, "cycle_momentum", name_);
  bool beta1 = du::read_bool(in, "use_beta1", name_);
  ATH_CHECK(total > 0, ValueError, "OneCycleLR: total_steps must be positive, got {}", total);
  check_pct(pct);
  ATH_CHECK(anneal == "cos" || anneal == "linear", ValueError,
            "OneCycleLR: anneal_strategy must be 'cos' or 'linear', got '{}'", anneal);
  ATH_CHECK(!cycle || opt_->momentum_kind() != MomentumKind::None, ValueError,
            "OneCycleLR: cycle_momentum is on but {} has no momentum", opt_->name());
  total_steps_ = total;
  pct_start_ = pct;
  anneal_ = anneal == "cos" ? AnnealStrategy::Cos : AnnealStrategy::Linear;
  three_phase_ = three;
  cycle_momentum_ = cycle;
  use_beta1_ = beta1;
  make_phases();
}

}  // namespace ath::optim
