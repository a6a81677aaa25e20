#include "athanor/optim/lr_scheduler.h"

#include <algorithm>
#include <cmath>

#include "athanor/core/error.h"
#include "json_util.h"
#include "sched_util.h"

namespace ath::optim {

using nlohmann::json;
namespace du = detail;

std::vector<double> PerGroup::expand(std::size_t groups, std::string_view owner,
                                     std::string_view what) const {
  ATH_CHECK(!values.empty(), ValueError, "{}: {} is required", owner, what);
  if (values.size() == 1) return std::vector<double>(groups, values[0]);
  ATH_CHECK(values.size() == groups, ValueError, "{}: expected {} values for {}, got {}", owner,
            groups, what, values.size());
  return values;
}

// ---- LRScheduler --------------------------------------------------------------------------------

LRScheduler::LRScheduler(std::string name, Optimizer& opt, int64_t last_epoch)
    : opt_(&opt), name_(std::move(name)), last_epoch_(last_epoch) {
  ATH_CHECK(last_epoch >= -1, ValueError, "{}: last_epoch must be >= -1, got {}", name_,
            last_epoch);
  const std::size_t n = opt.num_param_groups();
  for (std::size_t g = 0; g < n; ++g) {
    std::optional<double> initial = opt.group_value(g, "initial_lr");
    if (last_epoch == -1) {
      if (!initial) opt.set_group_value(g, "initial_lr", opt.lr(g));
    } else {
      ATH_CHECK(initial.has_value(), KeyError,
                "{}: param 'initial_lr' is not specified in param_groups[{}] when resuming an "
                "optimizer",
                name_, g);
    }
    base_lrs_.push_back(*opt.group_value(g, "initial_lr"));
  }
}

LRScheduler::LRScheduler(std::string name, Optimizer& opt, NoInit)
    : opt_(&opt), name_(std::move(name)) {}

LRScheduler::~LRScheduler() = default;

void LRScheduler::initial_step() {
  step_count_ = 0;
  step();
}

void LRScheduler::check_groups() const {
  ATH_CHECK(num_groups() == base_lrs_.size(), ValueError,
            "{}: the optimizer has {} param groups, the scheduler was built for {}", name_,
            num_groups(), base_lrs_.size());
}

std::vector<double> LRScheduler::group_lrs() const {
  std::vector<double> out;
  for (std::size_t g = 0; g < num_groups(); ++g) out.push_back(opt_->lr(g));
  return out;
}

void LRScheduler::set_group_lrs(const std::vector<double>& lrs) {
  for (std::size_t g = 0; g < lrs.size(); ++g) opt_->set_lr(g, lrs[g]);
  last_lr_ = group_lrs();
}

void LRScheduler::step() {
  check_groups();
  ++step_count_;
  ++last_epoch_;
  set_group_lrs(get_lr());
}

void LRScheduler::step(double epoch) {
  ATH_CHECK(epoch == std::floor(epoch) && std::abs(epoch) < 9e15, ValueError,
            "{}: step(epoch) takes a whole epoch, got {}", name_, epoch);
  check_groups();
  ++step_count_;
  last_epoch_ = static_cast<int64_t>(epoch);
  std::optional<std::vector<double>> closed = closed_form_lr();
  set_group_lrs(closed ? *closed : get_lr());
}

json LRScheduler::state_dict() const {
  json out = {{"base_lrs", du::numbers_json(base_lrs_)},
              {"last_epoch", last_epoch_},
              {"_step_count", step_count_},
              {"_last_lr", du::numbers_json(last_lr_)}};
  save_fields(out);
  return out;
}

void LRScheduler::load_state_dict(const json& s) {
  du::require_object(s, "the state dict", name_);
  const auto n = static_cast<int64_t>(num_groups());
  std::vector<double> base = du::read_numbers(s, "base_lrs", name_, n);
  int64_t last_epoch = du::read_int(s, "last_epoch", name_);
  int64_t step_count = du::read_int(s, "_step_count", name_);
  std::vector<double> last_lr = du::read_numbers(s, "_last_lr", name_, n);
  load_fields(s);  // validates, then assigns: the last thing that may throw
  base_lrs_ = std::move(base);
  last_epoch_ = last_epoch;
  step_count_ = step_count;
  last_lr_ = std::move(last_lr);
}

// ---- StepLR -------------------------------------------------------------------------------------

StepLR::StepLR(Optimizer& opt, StepLROptions o)
    : LRScheduler("StepLR", opt, o.last_epoch), step_size_(o.step_size), gamma_(o.gamma) {
  ATH_CHECK(step_size_ >= 1, ValueError, "StepLR: step_size must be >= 1, got {}", step_size_);
  initial_step();
}

std::vector<double> StepLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ == 0 || du::py_mod(last_epoch_, step_size_) != 0) return lrs;
  for (double& lr : lrs) lr = lr * gamma_;
  return lrs;
}

std::optional<std::vector<double>> StepLR::closed_form_lr() const {
  std::vector<double> out;
  for (double b : base_lrs_)
    out.push_back(b * std::pow(gamma_, double(du::py_floordiv(last_epoch_, step_size_))));
  return out;
}

void StepLR::save_fields(json& out) const {
  out["step_size"] = step_size_;
  out["gamma"] = du::number_json(gamma_);
}

void StepLR::load_fields(const json& in) {
  int64_t step_size = du::read_int(in, "step_size", name_);
  double gamma = du::read_number(in, "gamma", name_);
  ATH_CHECK(step_size >= 1, ValueError, "StepLR: step_size must be >= 1, got {}", step_size);
  step_size_ = step_size;
  gamma_ = gamma;
}

// ---- MultiStepLR --------------------------------------------------------------------------------

MultiStepLR::MultiStepLR(Optimizer& opt, MultiStepLROptions o)
    : LRScheduler("MultiStepLR", opt, o.last_epoch),
      milestones_(std::move(o.milestones)),
      gamma_(o.gamma) {
  std::sort(milestones_.begin(), milestones_.end());
  initial_step();
}

std::vector<double> MultiStepLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  const auto count = std::count(milestones_.begin(), milestones_.end(), last_epoch_);
  if (count == 0) return lrs;
  for (double& lr : lrs) lr = lr * std::pow(gamma_, double(count));
  return lrs;
}

std::optional<std::vector<double>> MultiStepLR::closed_form_lr() const {
  const auto passed =
      std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin();
  std::vector<double> out;
  for (double b : base_lrs_) out.push_back(b * std::pow(gamma_, double(passed)));
  return out;
}

void MultiStepLR::save_fields(json& out) const {
  out["milestones"] = milestones_;
  out["gamma"] = du::number_json(gamma_);
}

void MultiStepLR::load_fields(const json& in) {
  std::vector<int64_t> milestones = du::read_ints(in, "milestones", name_);
  double gamma = du::read_number(in, "gamma", name_);
  std::sort(milestones.begin(), milestones.end());
  milestones_ = std::move(milestones);
  gamma_ = gamma;
}

// ---- ConstantLR ---------------------------------------------------------------------------------

namespace {
void check_factor(double f, const char* what, std::string_view owner) {
  ATH_CHECK(f >= 0 && f <= 1, ValueError, "{}: {} must be in [0, 1], got {}", owner, what, f);
}
}  // namespace

ConstantLR::ConstantLR(Optimizer& opt, ConstantLROptions o)
    : LRScheduler("ConstantLR", opt, o.last_epoch), factor_(o.factor), total_iters_(o.total_iters) {
  check_factor(factor_, "factor", name_);
  initial_step();
}

std::vector<double> ConstantLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ == 0) {
    for (double& lr : lrs) lr = lr * factor_;
  } else if (last_epoch_ == total_iters_) {
    for (double& lr : lrs) lr = lr * (1.0 / factor_);
  }
  return lrs;
}

std::optional<std::vector<double>> ConstantLR::closed_form_lr() const {
  std::vector<double> out;
  const double reached = last_epoch_ >= total_iters_ ? 1.0 : 0.0;
  for (double b : base_lrs_) out.push_back(b * (factor_ + reached * (1 - factor_)));
  return out;
}

void ConstantLR::save_fields(json& out) const {
  out["factor"] = du::number_json(factor_);
  out["total_iters"] = total_iters_;
}

void ConstantLR::load_fields(const json& in) {
  double factor = du::read_number(in, "factor", name_);
  int64_t total = du::read_int(in, "total_iters", name_);
  check_factor(factor, "factor", name_);
  factor_ = factor;
  total_iters_ = total;
}

// ---- LinearLR -----------------------------------------------------------------------------------

namespace {
void check_linear(double start, double end, int64_t total, std::string_view owner) {
  ATH_CHECK(start > 0 && start <= 1, ValueError,
            "{}: start_factor must be in (0, 1], got {} (0 would divide by zero)", owner, start);
  check_factor(end, "end_factor", owner);
  ATH_CHECK(total >= 1, ValueError, "{}: total_iters must be >= 1, got {}", owner, total);
}
}  // namespace

LinearLR::LinearLR(Optimizer& opt, LinearLROptions o)
    : LRScheduler("LinearLR", opt, o.last_epoch),
      start_factor_(o.start_factor),
      end_factor_(o.end_factor),
      total_iters_(o.total_iters) {
  check_linear(start_factor_, end_factor_, total_iters_, name_);
  initial_step();
}

std::vector<double> LinearLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ == 0) {
    for (double& lr : lrs) lr = lr * start_factor_;
  } else if (last_epoch_ <= total_iters_) {
    const double d = end_factor_ - start_factor_;
    const double f = 1. + d / (double(total_iters_) * start_factor_ + double(last_epoch_ - 1) * d);
    for (double& lr : lrs) lr = lr * f;
  }
  return lrs;
}

std::optional<std::vector<double>> LinearLR::closed_form_lr() const {
  std::vector<double> out;
  const double passed = double(std::min(total_iters_, last_epoch_));
  for (double b : base_lrs_)
    out.push_back(b *
                  (start_factor_ + (end_factor_ - start_factor_) * passed / double(total_iters_)));
  return out;
}

void LinearLR::save_fields(json& out) const {
  out["start_factor"] = du::number_json(start_factor_);
  out["end_factor"] = du::number_json(end_factor_);
  out["total_iters"] = total_iters_;
}

void LinearLR::load_fields(const json& in) {
  double start = du::read_number(in, "start_factor", name_);
  double end = du::read_number(in, "end_factor", name_);
  int64_t total = du::read_int(in, "total_iters", name_);
  check_linear(start, end, total, name_);
  start_factor_ = start;
  end_factor_ = end;
  total_iters_ = total;
}

// ---- ExponentialLR ------------------------------------------------------------------------------

ExponentialLR::ExponentialLR(Optimizer& opt, ExponentialLROptions o)
    : LRScheduler("ExponentialLR", opt, o.last_epoch), gamma_(o.gamma) {
  ATH_CHECK(!std::isnan(gamma_), ValueError, "ExponentialLR: gamma is required");
  initial_step();
}

std::vector<double> ExponentialLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ != 0)
    for (double& lr : lrs) lr = lr * gamma_;
  return lrs;
}

std::optional<std::vector<double>> ExponentialLR::closed_form_lr() const {
  std::vector<double> out;
  for (double b : base_lrs_) out.push_back(b * std::pow(gamma_, double(last_epoch_)));
  return out;
}

void ExponentialLR::save_fields(json& out) const { out["gamma"] = du::number_json(gamma_); }

void ExponentialLR::load_fields(const json& in) { gamma_ = du::read_number(in, "gamma", name_); }

// ---- PolynomialLR -------------------------------------------------------------------------------

PolynomialLR::PolynomialLR(Optimizer& opt, PolynomialLROptions o)
    : LRScheduler("PolynomialLR", opt, o.last_epoch), total_iters_(o.total_iters), power_(o.power) {
  ATH_CHECK(total_iters_ >= 1, ValueError, "PolynomialLR: total_iters must be >= 1, got {}",
            total_iters_);
  initial_step();
}

std::vector<double> PolynomialLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ == 0 || last_epoch_ > total_iters_) return lrs;
  const double t = double(total_iters_);
  const double decay =
      std::pow((1.0 - double(last_epoch_) / t) / (1.0 - double(last_epoch_ - 1) / t), power_);
  for (double& lr : lrs) lr = lr * decay;
  return lrs;
}

std::optional<std::vector<double>> PolynomialLR::closed_form_lr() const {
  std::vector<double> out;
  const double t = double(total_iters_);
  for (double b : base_lrs_)
    out.push_back(b * std::pow(1.0 - double(std::min(total_iters_, last_epoch_)) / t, power_));
  return out;
}

void PolynomialLR::save_fields(json& out) const {
  out["total_iters"] = total_iters_;
  out["power"] = du::number_json(power_);
}

void PolynomialLR::load_fields(const json& in) {
  int64_t total = du::read_int(in, "total_iters", name_);
  double power = du::read_number(in, "power", name_);
  ATH_CHECK(total >= 1, ValueError, "PolynomialLR: total_iters must be >= 1, got {}", total);
  total_iters_ = total;
  power_ = power;
}

// ---- LambdaLR -----------------------------------------------------------------------------------

LambdaLR::LambdaLR(Optimizer& opt, LrLambda fn, int64_t last_epoch)
    : LambdaLR(opt, std::vector<LrLambda>(opt.num_param_groups(), fn), last_epoch) {}

LambdaLR::LambdaLR(Optimizer& opt, std::vector<LrLambda> fns, int64_t last_epoch)
    : LRScheduler("LambdaLR", opt, last_epoch), fns_(std::move(fns)) {
  ATH_CHECK(fns_.size() == num_groups(), ValueError, "LambdaLR: expected {} lr_lambdas, but got {}",
            num_groups(), fns_.size());
  for (std::size_t g = 0; g < fns_.size(); ++g)
    ATH_CHECK(static_cast<bool>(fns_[g]), ValueError, "LambdaLR: lr_lambda {} is empty", g);
  initial_step();
}

std::vector<double> LambdaLR::get_lr() {
  std::vector<double> out;
  for (std::size_t g = 0; g < fns_.size(); ++g) out.push_back(base_lrs_[g] * fns_[g](last_epoch_));
  return out;
}

void LambdaLR::save_fields(json& out) const {
  out["lr_lambdas"] = json::array();
  for (std::size_t g = 0; g < fns_.size(); ++g) out["lr_lambdas"].push_back(nullptr);
}

void LambdaLR::load_fields(const json& in) {
  const json& l = du::require(in, "lr_lambdas", name_);
  ATH_CHECK(l.is_array() && l.size() == fns_.size(), ValueError,
            "LambdaLR: 'lr_lambdas' must be a list of {} entries", fns_.size());
}

}  // namespace ath::optim
