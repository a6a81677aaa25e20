// Cooperative yield points: how a background service thread gets a core from busy compute
// threads when it needs one soon.
//
// The MPI communicator's thread drives nonblocking collectives forward by polling MPI_Test, and
// a ~1 MB all-reduce needs several polls on every rank. With one compute thread per core (2
// ranks x 1 thread on 2 cores) the Linux scheduler does not preempt a compute thread for the
// waking poller: measured here, a 1.19 MB all-reduce that takes 0.6 ms while the caller waits
// took ~20 ms while the caller computed, finishing only when the backward pass did. Polling
// faster cannot help a thread that never gets the core; the compute thread handing it over
// can. While a YieldRequest lives (the communicator holds one per call in flight),
// yield_point() calls sched_yield, which lets a runnable poller run its short poll and costs
// about a microsecond when none is waiting; otherwise it is one relaxed atomic load. The
// autograd engine calls it between backward nodes, so DDP's all-reduces progress while the
// backward runs.
//
//   #include "athanor/core/yield_point.h"
//   {
//     ath::YieldRequest in_flight;  // a background thread has work that needs polling
//     assert(ath::yields_requested());
//     ath::yield_point();           // lets it run if it is waiting for a core
//   }
//   assert(!ath::yields_requested());
#pragma once

namespace ath {

// While one lives, yield_point() yields. Movable, not copyable.
class YieldRequest {
 public:
  YieldRequest();
  ~YieldRequest();
  YieldRequest(YieldRequest&& other) noexcept;
  YieldRequest& operator=(YieldRequest&& other) noexcept;
  YieldRequest(const YieldRequest&) = delete;
  YieldRequest& operator=(const YieldRequest&) = delete;

 private:
  bool active_ = true;
};

// Whether any YieldRequest lives.
bool yields_requested();

// Yields the core (sched_yield) while a YieldRequest lives; otherwise returns at once.
void yield_point();

}  // namespace ath
