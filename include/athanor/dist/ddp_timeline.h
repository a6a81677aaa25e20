// The timeline of DistributedDataParallel's gradient all-reduces: for every synchronised step
// and bucket, when the bucket's gradients were all ready, when its all-reduce was submitted and
// when it completed (steady clock), and when that step's backward pass ended. From these it
// tells how much communication was hidden behind the backward computation, and writes a
// Chrome trace (chrome://tracing, Perfetto) with one event per bucket per step.
//
//   dist::DDPTimeline timeline;
//   auto t0 = dist::DDPTimeline::Clock::now();
//   using std::chrono::milliseconds;
//   dist::DDPStepTiming step{.step = 0, .backward_end = t0 + milliseconds(10)};
//   step.buckets.push_back({.bucket = 0, .bytes = 4096, .ready = t0 + milliseconds(2),
//                           .start = t0 + milliseconds(2), .end = t0 + milliseconds(12)});
//   timeline.add_step(step);
//   dist::DDPTimelineSummary s = timeline.summary();  // 8 of its 10 ms were before the end
//   assert(s.steps == 1 && s.hidden_fraction > 0.79 && s.hidden_fraction < 0.81);
//   std::string trace = timeline.chrome_trace_json();  // {"traceEvents": [...]}
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace ath::dist {

struct DDPBucketTiming {
  using TimePoint = std::chrono::steady_clock::time_point;
  int64_t bucket = 0;
  int64_t bytes = 0;
  TimePoint ready{};  // its last gradient was accumulated (or finish_gradient_sync forced it)
  TimePoint start{};  // the all-reduce was submitted
  TimePoint end{};    // the all-reduce completed
};

struct DDPStepTiming {
  int64_t step = 0;  // counts synchronised steps from 0
  std::chrono::steady_clock::time_point backward_end{};
  std::vector<DDPBucketTiming> buckets;  // in launch order
};

struct DDPTimelineSummary {
  int64_t steps = 0;
  int64_t bucket_events = 0;  // one per bucket per step
  double allreduce_s = 0;     // total all-reduce time (start to end)
  double hidden_s = 0;        // of which before its step's backward ended
  // hidden_s / allreduce_s: the share of communication overlapped with backward compute
  // (1 when there was no all-reduce time at all, as in a world of one process).
  double hidden_fraction = 1;
};

class DDPTimeline {
 public:
  using Clock = std::chrono::steady_clock;

  // Keeps the last `max_steps` steps (older ones are dropped); times in the trace count from
  // `origin`. `rank` is the trace's process id.
  explicit DDPTimeline(int64_t max_steps = 1000, int rank = 0,
                       Clock::time_point origin = Clock::now());

  void add_step(DDPStepTiming step);
  const std::deque<DDPStepTiming>& steps() const { return steps_; }
  void clear() { steps_.clear(); }

  DDPTimelineSummary summary() const;
  // Chrome trace JSON: per bucket per step one complete event ("ph": "X", "cat": "allreduce",
  // name "ddp bucket N", from start to end, args: step, bucket, bytes, ready_us, hidden_us), and
  // per step one instant event ("cat": "backward", "backward end"). Times in microseconds.
  std::string chrome_trace_json() const;
  // Writes chrome_trace_json() to `path` (atomically: a temporary file, then a rename).
  void write_chrome_trace(const std::string& path) const;

 private:
  int64_t max_steps_;
  int rank_;
  Clock::time_point origin_;
  std::deque<DDPStepTiming> steps_;
};

}  // namespace ath::dist
