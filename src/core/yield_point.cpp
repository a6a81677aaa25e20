#include "athanor/core/yield_point.h"

#include <atomic>
#include <thread>
#include <utility>

namespace ath {

namespace {
// Relaxed: a yield point that misses a request by a few nanoseconds only yields at the next.
std::atomic<int> g_requests{0};
}  // namespace

YieldRequest::YieldRequest() { g_requests.fetch_add(1, std::memory_order_relaxed); }

YieldRequest::~YieldRequest() {
  if (active_) g_requests.fetch_sub(1, std::memory_order_relaxed);
}

YieldRequest::YieldRequest(YieldRequest&& other) noexcept
    : active_(std::exchange(other.active_, false)) {}

YieldRequest& YieldRequest::operator=(YieldRequest&& other) noexcept {
  if (this != &other) {
    if (active_) g_requests.fetch_sub(1, std::memory_order_relaxed);
    active_ = std::exchange(other.active_, false);
  }
  return *this;
}

bool yields_requested() { return g_requests.load(std::memory_order_relaxed) > 0; }

void yield_point() {
  if (g_requests.load(std::memory_order_relaxed) > 0) std::this_thread::yield();
}

}  // namespace ath
