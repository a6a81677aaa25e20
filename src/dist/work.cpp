// Work handles: waiting with the call's own deadline as the bound, so a wait never outlives the
// call by more than the grace period a backend needs to report which ranks were missing.
#include <fmt/chrono.h>

#include "athanor/dist/communicator.h"
#include "work_state.h"

namespace ath::dist {

namespace detail {

void WorkState::complete() {
  {
    std::lock_guard lock(mutex_);
    if (status_ != Status::Pending) return;
    status_ = Status::Done;
    finished_at_ = Clock::now();
    yield_.reset();
  }
  cv_.notify_all();
}

void WorkState::fail(std::string message) {
  {
    std::lock_guard lock(mutex_);
    if (status_ != Status::Pending) return;
    status_ = Status::Failed;
    finished_at_ = Clock::now();
    yield_.reset();
    error_ = std::move(message);
  }
  cv_.notify_all();
}

bool WorkState::wait_until(Clock::time_point until) {
  std::unique_lock lock(mutex_);
  return cv_.wait_until(lock, until, [&] { return status_ != Status::Pending; });
}

bool WorkState::finished() const {
  std::lock_guard lock(mutex_);
  return status_ != Status::Pending;
}

WorkState::Clock::time_point WorkState::finished_at() const {
  std::lock_guard lock(mutex_);
  return finished_at_;
}

bool WorkState::failed() const {
  std::lock_guard lock(mutex_);
  return status_ == Status::Failed;
}

void WorkState::rethrow() const {
  std::lock_guard lock(mutex_);
  if (status_ == Status::Failed) throw CommError(error_);
}

}  // namespace detail

namespace {
// The backend reports a timeout itself, naming the missing ranks; this margin lets its report
// arrive before wait() gives up with a plainer one.
constexpr std::chrono::seconds kReportGrace{1};

void require_defined(const std::shared_ptr<detail::WorkState>& state) {
  ATH_CHECK(state != nullptr, ValueError, "dist::Work: the handle is empty (default-constructed)");
}
}  // namespace

void Work::wait() const {
  require_defined(state_);
  if (!state_->wait_until(state_->deadline() + kReportGrace)) {
    state_->fail(
        fmt::format("{} '{}': did not complete by its deadline and the backend did not "
                    "report why (is its communication thread alive?)",
                    to_string(state_->kind()), state_->name()));
  }
  state_->rethrow();
}

void Work::wait(std::chrono::milliseconds timeout) const {
  require_defined(state_);
  auto until =
      std::min(detail::WorkState::Clock::now() + timeout, state_->deadline() + kReportGrace);
  if (!state_->wait_until(until)) {
    if (detail::WorkState::Clock::now() >= state_->deadline() + kReportGrace) {
      wait();  // past the call's own deadline: fail it as wait() does
      return;
    }
    throw CommError(
        fmt::format("{} '{}': still running after wait({}); it keeps running until "
                    "it completes or reaches its deadline",
                    to_string(state_->kind()), state_->name(), timeout));
  }
  state_->rethrow();
}

bool Work::test() const {
  require_defined(state_);
  if (!state_->finished()) return false;
  state_->rethrow();
  return true;
}

bool Work::is_completed() const { return state_ != nullptr && state_->finished(); }

std::optional<std::chrono::steady_clock::time_point> Work::completed_at() const {
  if (state_ == nullptr || !state_->finished()) return std::nullopt;
  return state_->finished_at();
}

}  // namespace ath::dist
