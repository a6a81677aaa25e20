// DDP timeline: bookkeeping of bucket all-reduce times, its overlap summary and Chrome trace.
#include "athanor/dist/ddp_timeline.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <span>

#include "athanor/io/atomic_file.h"

namespace ath::dist {

namespace {

double seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// The part of [start, end] before `limit`.
std::chrono::steady_clock::duration before(const DDPBucketTiming& b,
                                           std::chrono::steady_clock::time_point limit) {
  const auto until = std::min(b.end, limit);
  return until > b.start ? until - b.start : std::chrono::steady_clock::duration::zero();
}

}  // namespace

DDPTimeline::DDPTimeline(int64_t max_steps, int rank, Clock::time_point origin)
    : max_steps_(max_steps), rank_(rank), origin_(origin) {}

void DDPTimeline::add_step(DDPStepTiming step) {
  if (max_steps_ <= 0) return;
  steps_.push_back(std::move(step));
  while (static_cast<int64_t>(steps_.size()) > max_steps_) steps_.pop_front();
}

DDPTimelineSummary DDPTimeline::summary() const {
  DDPTimelineSummary s;
  s.steps = static_cast<int64_t>(steps_.size());
  for (const DDPStepTiming& step : steps_) {
    for (const DDPBucketTiming& b : step.buckets) {
      ++s.bucket_events;
      s.allreduce_s += seconds(b.end - b.start);
      s.hidden_s += seconds(before(b, step.backward_end));
    }
  }
  s.hidden_fraction = s.allreduce_s > 0 ? s.hidden_s / s.allreduce_s : 1.0;
  return s;
}

std::string DDPTimeline::chrome_trace_json() const {
  auto us = [&](Clock::time_point t) {
    return std::chrono::duration<double, std::micro>(t - origin_).count();
  };
  nlohmann::json events = nlohmann::json::array();
  for (const DDPStepTiming& step : steps_) {
    for (const DDPBucketTiming& b : step.buckets) {
      events.push_back(
          {{"name", "ddp bucket " + std::to_string(b.bucket)},
           {"cat", "allreduce"},
           {"ph", "X"},
           {"pid", rank_},
           {"tid", 1},
           {"ts", us(b.start)},
           {"dur", std::chrono::duration<double, std::micro>(b.end - b.start).count()},
           {"args",
            {{"step", step.step},
             {"bucket", b.bucket},
             {"bytes", b.bytes},
             {"ready_us", us(b.ready)},
             {"hidden_us",
              std::chrono::duration<double, std::micro>(before(b, step.backward_end)).count()}}}});
    }
    events.push_back({{"name", "backward end"},
                      {"cat", "backward"},
                      {"ph", "i"},
                      {"s", "p"},
                      {"pid", rank_},
                      {"tid", 0},
                      {"ts", us(step.backward_end)},
                      {"args", {{"step", step.step}}}});
  }
  nlohmann::json trace = {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
  return trace.dump();
}

void DDPTimeline::write_chrome_trace(const std::string& path) const {
  const std::string text = chrome_trace_json();
  write_file_atomic(
      path, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

}  // namespace ath::dist
