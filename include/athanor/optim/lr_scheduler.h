// Learning-rate schedulers: torch.optim.lr_scheduler 1.13, with the same values (the chainable
// form for step(), the closed form for step(epoch), the step made at construction, and
// "initial_lr" written into each param group).
//
//   #include "athanor/nn/linear.h"
//   nn::Linear model({.in = 4, .out = 2});
//   auto train = [](optim::Optimizer& opt) { opt.step(); };   // an epoch's batches, stubbed
//   optim::SGD opt(model.parameters(), {.lr = 0.1, .momentum = 0.9});
//   optim::StepLR sched(opt, {.step_size = 30, .gamma = 0.1});
//   for (int epoch = 0; epoch < 100; ++epoch) { train(opt); sched.step(); }
//   std::vector<double> lrs = sched.get_last_lr();   // one lr per param group
//   assert(lrs.size() == 1 && std::abs(lrs[0] - 1e-4) < 1e-12);   // 0.1 * 0.1^3
//   nlohmann::json s = sched.state_dict();
//
// A scheduler keeps a reference to its optimizer, which must outlive it. To resume, construct
// the optimizer and scheduler as at the start, then load both state dicts (loading the optimizer
// restores each group's lr; constructing a scheduler after that load would overwrite it).
// This header: the base class and StepLR, MultiStepLR, ConstantLR, LinearLR, ExponentialLR,
// PolynomialLR, LambdaLR. Also: cosine_lr.h, one_cycle_lr.h, sequential_lr.h,
// reduce_lr_on_plateau.h.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "athanor/optim/optimizer.h"

namespace ath::optim {

// One value for every param group, or one per group: `.max_lr = 0.1`, `.max_lr = {0.1, 0.01}`.
struct PerGroup {
  std::vector<double> values;
  PerGroup() = default;
  PerGroup(double v) : values{v} {}  // NOLINT: implicit, so options read naturally
  PerGroup(std::initializer_list<double> v) : values(v) {}
  // The values for `groups` groups (ValueError naming `owner` and `what` when the count is off).
  std::vector<double> expand(std::size_t groups, std::string_view owner,
                             std::string_view what) const;
};

class SequentialLR;
class ChainedScheduler;

class LRScheduler {
 public:
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;
  virtual ~LRScheduler();

  const std::string& name() const { return name_; }
  Optimizer& optimizer() const { return *opt_; }

  // One epoch (or iteration) on: computes the next lrs from the current ones and writes them
  // into the optimizer's groups.
  virtual void step();
  // Jumps to `epoch` (PyTorch's deprecated step(epoch)): the closed form where the scheduler
  // has one. Only CosineAnnealingWarmRestarts accepts fractional epochs.
  virtual void step(double epoch);

  const std::vector<double>& get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  const std::vector<double>& base_lrs() const { return base_lrs_; }

  // PyTorch's keys: base_lrs, last_epoch, _step_count, _last_lr and the scheduler's own fields.
  virtual nlohmann::json state_dict() const;
  // Validates every key first; throws KeyError/ValueError and changes nothing on error.
  virtual void load_state_dict(const nlohmann::json& state);

 protected:
  // Sets each group's "initial_lr" (last_epoch == -1) or requires it (resuming), as PyTorch.
  LRScheduler(std::string name, Optimizer& opt, int64_t last_epoch);
  // For schedulers that manage others and never set initial_lr themselves.
  struct NoInit {};
  LRScheduler(std::string name, Optimizer& opt, NoInit);

  // The step PyTorch's constructor makes; derived constructors call it last.
  void initial_step();
  // The chainable form: next lrs from the groups' current ones.
  virtual std::vector<double> get_lr() = 0;
  virtual std::optional<std::vector<double>> closed_form_lr() const { return std::nullopt; }
  // The scheduler's own state fields. load_fields must validate everything before assigning.
  virtual void save_fields(nlohmann::json& /*out*/) const {}
  virtual void load_fields(const nlohmann::json& /*in*/) {}

  // ValueError when groups were added to the optimizer after the scheduler was built.
  void check_groups() const;
  std::vector<double> group_lrs() const;
  void set_group_lrs(const std::vector<double>& lrs);
  std::size_t num_groups() const { return opt_->num_param_groups(); }

  Optimizer* opt_;
  std::string name_;
  std::vector<double> base_lrs_;
  int64_t last_epoch_ = -1;
  int64_t step_count_ = 0;
  std::vector<double> last_lr_;

  friend class SequentialLR;
  friend class ChainedScheduler;
};

struct StepLROptions {
  int64_t step_size = 0;  // required, >= 1
  double gamma = 0.1;
  int64_t last_epoch = -1;
};

// lr = base_lr * gamma^(epoch // step_size)
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& opt, StepLROptions options);

 private:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  void save_fields(nlohmann::json& out) const override;
  void load_fields(const nlohmann::json& in) override;
  int64_t step_size_;
  double gamma_;
};

struct MultiStepLROptions {
  std::vector<int64_t> milestones;  // a repeated milestone multiplies by gamma once per copy
  double gamma = 0.1;
  int64_t last_epoch = -1;
};

// lr = base_lr * gamma^(number of milestones <= epoch)
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& opt, MultiStepLROptions options);

 private:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  void save_fields(nlohmann::json& out) const override;
  void load_fields(const nlohmann::json& in) override;
  std::vector<int64_t> milestones_;  // sorted
  double gamma_;
};

struct ConstantLROptions {
  double factor = 1.0 / 3;  // in [0, 1]
  int64_t total_iters = 5;
  int64_t last_epoch = -1;
};

// lr = base_lr * factor until total_iters, then base_lr.
class ConstantLR : public LRScheduler {
 public:
  ConstantLR(Optimizer& opt, ConstantLROptions options = {});

 private:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  void save_fields(nlohmann::json& out) const override;
  void load_fields(const nlohmann::json& in) override;
  double factor_;
  int64_t total_iters_;
};

struct LinearLROptions {
  double start_factor = 1.0 / 3;  // in (0, 1] (PyTorch 1.13 allows 0, which divides by zero)
  double end_factor = 1.0;        // in [0, 1]
  int64_t total_iters = 5;
  int64_t last_epoch = -1;
};

// The factor goes linearly from start_factor to end_factor over total_iters steps.
class LinearLR : public LRScheduler {
 public:
  LinearLR(Optimizer& opt, LinearLROptions options = {});

 private:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  void save_fields(nlohmann::json& out) const override;
  void load_fields(const nlohmann::json& in) override;
  double start_factor_, end_factor_;
  int64_t total_iters_;
};

struct ExponentialLROptions {
  double gamma = kRequired;  // required
  int64_t last_epoch = -1;
};

// lr = base_lr * gamma^epoch
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& opt, ExponentialLROptions options);

 private:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  void save_fields(nlohmann::json& out) const override;
  void load_fields(const nlohmann::json& in) override;
  double gamma_;
};

struct PolynomialLROptions {
  int64_t total_iters = 5;
  double power = 1.0;
  int64_t last_epoch = -1;
};

// lr = base_lr * (1 - min(epoch, total_iters) / total_iters)^power
class PolynomialLR : public LRScheduler {
 public:
  PolynomialLR(Optimizer& opt, PolynomialLROptions options = {});

 private:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  void save_fields(nlohmann::json& out) const override;
  void load_fields(const nlohmann::json& in) override;
  int64_t total_iters_;
  double power_;
};

// lr = base_lr * f(epoch), one function for every group or one per group. The functions are not
// part of the state dict (PyTorch saves only callable objects' attributes; a std::function has
// none): its "lr_lambdas" entry is a list of nulls.
using LrLambda = std::function<double(int64_t)>;
class LambdaLR : public LRScheduler {
 public:
  LambdaLR(Optimizer& opt, LrLambda fn, int64_t last_epoch = -1);
  LambdaLR(Optimizer& opt, std::vector<LrLambda> fns, int64_t last_epoch = -1);

 private:
  std::vector<double> get_lr() override;
  void save_fields(nlohmann::json& out) const override;
  void load_fields(const nlohmann::json& in) override;
  std::vector<LrLambda> fns_;
};

}  // namespace ath::optim
