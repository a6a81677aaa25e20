#include "athanor/optim/sequential_lr.h"

#include <algorithm>

#include "athanor/core/error.h"
#include "json_util.h"

namespace ath::optim {

using nlohmann::json;
namespace du = detail;

namespace {

Optimizer& first_optimizer(const SchedulerRefs& s, const char* owner) {
  ATH_CHECK(!s.empty(), ValueError, "{}: expects at least one scheduler", owner);
  return s[0].get().optimizer();
}

json children_json(const SchedulerRefs& s) {
  json out = json::array();
  for (const LRScheduler& c : s) out.push_back(c.state_dict());
  return out;
}

// Loads every child or none: children already loaded are restored if a later one fails.
void load_children(const SchedulerRefs& s, const json& in, std::string_view owner) {
  const json& list = du::require(in, "_schedulers", owner);
  ATH_CHECK(list.is_array() && list.size() == s.size(), ValueError,
            "{}: '_schedulers' must list {} state dicts", owner, s.size());
  std::vector<json> backup;
  for (const LRScheduler& c : s) backup.push_back(c.state_dict());
  std::size_t i = 0;
  try {
    for (; i < s.size(); ++i) s[i].get().load_state_dict(list[i]);
  } catch (...) {
    for (std::size_t k = 0; k < i; ++k) s[k].get().load_state_dict(backup[k]);
    throw;
  }
}

}  // namespace

// ---- SequentialLR -------------------------------------------------------------------------------

SequentialLR::SequentialLR(Optimizer& opt, SchedulerRefs schedulers,
                           std::vector<int64_t> milestones, int64_t last_epoch)
    : LRScheduler("SequentialLR", opt, NoInit{}),
      schedulers_(std::move(schedulers)),
      milestones_(std::move(milestones)) {
  ATH_CHECK(!schedulers_.empty(), ValueError, "SequentialLR: expects at least one scheduler");
  for (std::size_t i = 0; i < schedulers_.size(); ++i)
    ATH_CHECK(&schedulers_[i].get().optimizer() == &opt, ValueError,
              "SequentialLR: expects all schedulers to belong to the same optimizer, but got "
              "scheduler {} with a different one",
              i);
  ATH_CHECK(milestones_.size() + 1 == schedulers_.size(), ValueError,
            "SequentialLR: expects number of schedulers provided to be one more than the number "
            "of milestone points, but got {} schedulers and {} milestones",
            schedulers_.size(), milestones_.size());
  ATH_CHECK(std::is_sorted(milestones_.begin(), milestones_.end()), ValueError,
            "SequentialLR: milestones must be increasing");
  last_epoch_ = last_epoch + 1;
  for (std::size_t g = 0; g < num_groups(); ++g) {
    std::optional<double> initial = opt.group_value(g, "initial_lr");
    ATH_CHECK(initial.has_value(), KeyError, "SequentialLR: param group {} has no 'initial_lr'", g);
    opt.set_lr(g, *initial);
  }
  for (LRScheduler& s : schedulers_) s.last_epoch_ -= 1;
  schedulers_[0].get().initial_step();
  last_lr_ = schedulers_[0].get().get_last_lr();
}

void SequentialLR::step() {
  ATH_CHECK(last_lr_.size() == num_groups(), ValueError,
            "SequentialLR: the optimizer has {} param groups, the scheduler was built for {}",
            num_groups(), last_lr_.size());
  ++last_epoch_;
  const auto idx = static_cast<std::size_t>(
      std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin());
  LRScheduler& s = schedulers_[idx];
  if (idx > 0 && milestones_[idx - 1] == last_epoch_)
    s.step(0.0);
  else
    s.step();
  last_lr_ = s.get_last_lr();
}

void SequentialLR::step(double) {
  ATH_THROW(NotImplementedError, "SequentialLR: step(epoch) is not supported (as in PyTorch)");
}

json SequentialLR::state_dict() const {
  return {{"_milestones", milestones_},
          {"last_epoch", last_epoch_},
          {"_last_lr", du::numbers_json(last_lr_)},
          {"_schedulers", children_json(schedulers_)}};
}

void SequentialLR::load_state_dict(const json& s) {
  du::require_object(s, "the state dict", name_);
  std::vector<int64_t> milestones = du::read_ints(s, "_milestones", name_);
  int64_t last_epoch = du::read_int(s, "last_epoch", name_);
  std::vector<double> last_lr =
      du::read_numbers(s, "_last_lr", name_, static_cast<int64_t>(num_groups()));
  ATH_CHECK(milestones.size() + 1 == schedulers_.size(), ValueError,
            "SequentialLR: state dict has {} milestones for {} schedulers", milestones.size(),
            schedulers_.size());
  load_children(schedulers_, s, name_);
  milestones_ = std::move(milestones);
  last_epoch_ = last_epoch;
  last_lr_ = std::move(last_lr);
}

// ---- ChainedScheduler ---------------------------------------------------------------------------

ChainedScheduler::ChainedScheduler(SchedulerRefs schedulers)
    : LRScheduler("ChainedScheduler", first_optimizer(schedulers, "ChainedScheduler"), NoInit{}),
      schedulers_(std::move(schedulers)) {
  for (std::size_t i = 1; i < schedulers_.size(); ++i)
    ATH_CHECK(&schedulers_[i].get().optimizer() == opt_, ValueError,
              "ChainedScheduler: expects all schedulers to belong to the same optimizer, but got "
              "schedulers at index 0 and {} to be different",
              i);
  last_lr_ = group_lrs();
}

void ChainedScheduler::step() {
  for (LRScheduler& s : schedulers_) s.step();
  last_lr_ = group_lrs();
}

void ChainedScheduler::step(double) {
  ATH_THROW(NotImplementedError, "ChainedScheduler: step(epoch) is not supported (as in PyTorch)");
}

json ChainedScheduler::state_dict() const {
  return {{"_last_lr", du::numbers_json(last_lr_)}, {"_schedulers", children_json(schedulers_)}};
}

void ChainedScheduler::load_state_dict(const json& s) {
  du::require_object(s, "the state dict", name_);
  std::vector<double> last_lr =
      du::read_numbers(s, "_last_lr", name_, static_cast<int64_t>(num_groups()));
  load_children(schedulers_, s, name_);
  last_lr_ = std::move(last_lr);
}

}  // namespace ath::optim
