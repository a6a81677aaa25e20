// The shared state behind a dist::Work: a status a backend sets once (done or failed) and
// callers wait on. Backends keep their own record of the call; this is only the rendezvous.
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <string>

#include "athanor/core/yield_point.h"
#include "athanor/dist/communicator.h"

namespace ath::dist::detail {

class WorkState {
 public:
  using Clock = std::chrono::steady_clock;

  WorkState(Collective kind, std::string name, Clock::time_point deadline)
      : kind_(kind), name_(std::move(name)), deadline_(deadline) {}

  Collective kind() const { return kind_; }
  const std::string& name() const { return name_; }
  Clock::time_point deadline() const { return deadline_; }

  // Until the call finishes, compute threads yield at their yield points (core/yield_point.h):
  // for a backend whose own thread must poll to move the call forward.
  void request_yields() {
    std::lock_guard lock(mutex_);
    if (status_ == Status::Pending) yield_.emplace();
  }

  // The first of complete()/fail() wins; both wake every waiter.
  void complete();
  void fail(std::string message);

  // Waits until finished or `until`; true when finished.
  bool wait_until(Clock::time_point until);
  bool finished() const;
  bool failed() const;
  // When complete()/fail() won; meaningful once finished().
  Clock::time_point finished_at() const;
  // Throws the failure as a CommError (no-op when the call succeeded).
  void rethrow() const;

 private:
  enum class Status { Pending, Done, Failed };
  Collective kind_;
  std::string name_;
  Clock::time_point deadline_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  Status status_ = Status::Pending;
  Clock::time_point finished_at_{};
  std::string error_;
  std::optional<YieldRequest> yield_;
};

}  // namespace ath::dist::detail
