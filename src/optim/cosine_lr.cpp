#include "athanor/optim/cosine_lr.h"

#include <cmath>
#include <numbers>

#include "athanor/core/error.h"
#include "json_util.h"
#include "sched_util.h"

namespace ath::optim {

using nlohmann::json;
namespace du = detail;
using std::numbers::pi;

// ---- CosineAnnealingLR --------------------------------------------------------------------------

CosineAnnealingLR::CosineAnnealingLR(Optimizer& opt, CosineAnnealingLROptions o)
    : LRScheduler("CosineAnnealingLR", opt, o.last_epoch), T_max_(o.T_max), eta_min_(o.eta_min) {
  ATH_CHECK(T_max_ >= 1, ValueError, "CosineAnnealingLR: T_max must be >= 1, got {}", T_max_);
  initial_step();
}

std::vector<double> CosineAnnealingLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  const double T = double(T_max_), e = double(last_epoch_);
  if (last_epoch_ == 0) return lrs;
  if (step_count_ == 1 && last_epoch_ > 0) {  // resumed with last_epoch: closed form
    for (std::size_t g = 0; g < lrs.size(); ++g)
      lrs[g] = eta_min_ + (base_lrs_[g] - eta_min_) * (1 + std::cos(e * pi / T)) / 2;
  } else if (du::py_mod(last_epoch_ - 1 - T_max_, 2 * T_max_) == 0) {
    for (std::size_t g = 0; g < lrs.size(); ++g)
      lrs[g] = lrs[g] + (base_lrs_[g] - eta_min_) * (1 - std::cos(pi / T)) / 2;
  } else {
    const double ratio = (1 + std::cos(pi * e / T)) / (1 + std::cos(pi * (e - 1) / T));
    for (double& lr : lrs) lr = ratio * (lr - eta_min_) + eta_min_;
  }
  return lrs;
}

std::optional<std::vector<double>> CosineAnnealingLR::closed_form_lr() const {
  std::vector<double> out;
  for (double b : base_lrs_)
    out.push_back(eta_min_ +
                  (b - eta_min_) * (1 + std::cos(pi * double(last_epoch_) / double(T_max_))) / 2);
  return out;
}

void CosineAnnealingLR::save_fields(json& out) const {
  out["T_max"] = T_max_;
  out["eta_min"] = du::number_json(eta_min_);
}

void CosineAnnealingLR::load_fields(const json& in) {
  int64_t T_max = du::read_int(in, "T_max", name_);
  double eta_min = du::read_number(in, "eta_min", name_);
  ATH_CHECK(T_max >= 1, ValueError, "CosineAnnealingLR: T_max must be >= 1, got {}", T_max);
  T_max_ = T_max;
  eta_min_ = eta_min;
}

// ---- CosineAnnealingWarmRestarts ----------------------------------------------------------------

namespace {
void check_warm(int64_t T_0, int64_t T_mult, std::string_view owner) {
  ATH_CHECK(T_0 >= 1, ValueError, "{}: expected positive integer T_0, but got {}", owner, T_0);
  ATH_CHECK(T_mult >= 1, ValueError, "{}: expected integer T_mult >= 1, but got {}", owner, T_mult);
}
}  // namespace

CosineAnnealingWarmRestarts::CosineAnnealingWarmRestarts(Optimizer& opt,
                                                         CosineAnnealingWarmRestartsOptions o)
    : LRScheduler("CosineAnnealingWarmRestarts", opt, o.last_epoch),
      T_0_(o.T_0),
      T_i_(o.T_0),
      T_mult_(o.T_mult),
      eta_min_(o.eta_min),
      T_cur_(double(o.last_epoch)) {
  check_warm(T_0_, T_mult_, name_);
  initial_step();
}

// PyTorch's override of step() neither counts _step_count nor uses the closed form.
void CosineAnnealingWarmRestarts::step() {
  check_groups();
  if (last_epoch_ < 0) {
    step(0.0);
    return;
  }
  T_cur_ = T_cur_ + 1;
  if (T_cur_ >= double(T_i_)) {
    T_cur_ = T_cur_ - double(T_i_);
    T_i_ = T_i_ * T_mult_;
  }
  last_epoch_ = last_epoch_ + 1;
  set_group_lrs(get_lr());
}

void CosineAnnealingWarmRestarts::step(double epoch) {
  ATH_CHECK(epoch >= 0 && std::isfinite(epoch), ValueError,
            "{}: expected non-negative epoch, but got {}", name_, epoch);
  check_groups();
  if (epoch >= double(T_0_)) {
    if (T_mult_ == 1) {
      T_cur_ = std::fmod(epoch, double(T_0_));
    } else {
      const double m = double(T_mult_);
      const auto n =
          static_cast<int64_t>(std::log(epoch / double(T_0_) * (m - 1) + 1) / std::log(m));
      int64_t mult_n = 1;
      for (int64_t k = 0; k < n; ++k) mult_n *= T_mult_;
      T_cur_ = epoch - double(T_0_ * (mult_n - 1)) / double(T_mult_ - 1);
      T_i_ = T_0_ * mult_n;
    }
  } else {
    T_i_ = T_0_;
    T_cur_ = epoch;
  }
  last_epoch_ = static_cast<int64_t>(std::floor(epoch));
  set_group_lrs(get_lr());
}

std::vector<double> CosineAnnealingWarmRestarts::get_lr() {
  std::vector<double> out;
  for (double b : base_lrs_)
    out.push_back(eta_min_ + (b - eta_min_) * (1 + std::cos(pi * T_cur_ / double(T_i_))) / 2);
  return out;
}

void CosineAnnealingWarmRestarts::save_fields(json& out) const {
  out["T_0"] = T_0_;
  out["T_i"] = T_i_;
  out["T_mult"] = T_mult_;
  out["eta_min"] = du::number_json(eta_min_);
  out["T_cur"] = du::number_json(T_cur_);
}

void CosineAnnealingWarmRestarts::load_fields(const json& in) {
  int64_t T_0 = du::read_int(in, "T_0", name_);
  int64_t T_i = du::read_int(in, "T_i", name_);
  int64_t T_mult = du::read_int(in, "T_mult", name_);
  double eta_min = du::read_number(in, "eta_min", name_);
  double T_cur = du::read_number(in, "T_cur", name_);
  check_warm(T_0, T_mult, name_);
  ATH_CHECK(T_i >= 1, ValueError, "{}: T_i must be >= 1, got {}", name_, T_i);
  T_0_ = T_0;
  T_i_ = T_i;
  T_mult_ = T_mult;
  eta_min_ = eta_min;
  T_cur_ = T_cur;
}

}  // namespace ath::optim
