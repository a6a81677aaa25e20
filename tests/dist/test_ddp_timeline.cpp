// DistributedDataParallel's timeline: one all-reduce event per bucket per step in valid Chrome
// trace JSON, ordered times, and the overlap summary.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "ddp_test_util.h"

namespace ath::dist::testing {
namespace {

TEST(DDPTimeline, OneEventPerBucketPerStep) {
  Communicator& comm = world();
  Mlp model(100);
  DistributedDataParallel ddp(model, {.bucket_cap_bytes = 256, .first_bucket_cap_bytes = 64});
  const int64_t buckets = static_cast<int64_t>(ddp.buckets().size());
  ASSERT_EQ(buckets, 2);
  optim::SGD opt(model.parameters(), {.lr = 0.01});
  for (int step = 0; step < 3; ++step) {
    opt.zero_grad();
    ddp(randn({16, 8})).pow(2).mean().backward();
    ddp.finish_gradient_sync();
    opt.step();
  }
  {  // a no_sync backward and a finish without a synchronised backward record nothing
    auto guard = ddp.no_sync();
    ddp(randn({16, 8})).sum().backward();
  }
  ddp.finish_gradient_sync();

  const auto& steps = ddp.timeline().steps();
  ASSERT_EQ(steps.size(), 3u);
  for (std::size_t s = 0; s < steps.size(); ++s) {
    EXPECT_EQ(steps[s].step, static_cast<int64_t>(s));
    ASSERT_EQ(steps[s].buckets.size(), 2u);
    for (std::size_t b = 0; b < 2; ++b) {
      const DDPBucketTiming& t = steps[s].buckets[b];
      EXPECT_EQ(t.bucket, static_cast<int64_t>(b));
      EXPECT_LE(t.ready, t.start);
      EXPECT_LE(t.start, t.end);
      // Buckets are ready, and launched, during the backward pass.
      EXPECT_LE(t.start, steps[s].backward_end);
    }
  }
  const DDPTimelineSummary summary = ddp.timeline().summary();
  EXPECT_EQ(summary.steps, 3);
  EXPECT_EQ(summary.bucket_events, 6);
  EXPECT_GE(summary.hidden_fraction, 0.0);
  EXPECT_LE(summary.hidden_fraction, 1.0);
  EXPECT_LE(summary.hidden_s, summary.allreduce_s + 1e-12);
  if (comm.world_size() > 1) {
    EXPECT_GT(summary.allreduce_s, 0.0);
  }

  const auto path = std::filesystem::temp_directory_path() /
                    ("athanor_ddp_trace_" + std::to_string(::getpid()) + ".json");
  ddp.timeline().write_chrome_trace(path.string());
  std::ifstream in(path);
  const nlohmann::json trace = nlohmann::json::parse(in);  // throws if not valid JSON
  std::filesystem::remove(path);
  ASSERT_TRUE(trace.contains("traceEvents"));
  std::set<std::pair<int64_t, int64_t>> seen;
  int backward_ends = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["cat"] == "backward") {
      ++backward_ends;
      continue;
    }
    EXPECT_EQ(e["cat"], "allreduce");
    EXPECT_EQ(e["ph"], "X");
    EXPECT_EQ(e["pid"], comm.rank());
    EXPECT_GE(e["dur"].get<double>(), 0.0);
    const int64_t b = e["args"]["bucket"].get<int64_t>();
    EXPECT_EQ(e["name"], "ddp bucket " + std::to_string(b));
    EXPECT_TRUE(seen.insert({e["args"]["step"].get<int64_t>(), b}).second) << "duplicate event";
  }
  EXPECT_EQ(seen.size(), 6u);
  EXPECT_EQ(backward_ends, 3);
}

TEST(DDPTimeline, SummaryCountsTimeBeforeTheBackwardEnd) {
  using std::chrono::milliseconds;
  const auto t0 = DDPTimeline::Clock::now();
  DDPTimeline timeline(2, 0, t0);
  for (int64_t s = 0; s < 3; ++s) {  // keeps the last 2
    DDPStepTiming step{.step = s, .backward_end = t0 + milliseconds(10)};
    // 6 of 8 ms before the end; one entirely after (4 ms); one entirely before (2 ms).
    step.buckets.push_back(
        {.bucket = 0, .start = t0 + milliseconds(4), .end = t0 + milliseconds(12)});
    step.buckets.push_back(
        {.bucket = 1, .start = t0 + milliseconds(11), .end = t0 + milliseconds(15)});
    step.buckets.push_back(
        {.bucket = 2, .start = t0 + milliseconds(1), .end = t0 + milliseconds(3)});
    timeline.add_step(step);
  }
  const DDPTimelineSummary s = timeline.summary();
  EXPECT_EQ(s.steps, 2);
  EXPECT_EQ(timeline.steps().front().step, 1);
  EXPECT_EQ(s.bucket_events, 6);
  EXPECT_NEAR(s.allreduce_s, 2 * 0.014, 1e-9);
  EXPECT_NEAR(s.hidden_s, 2 * 0.008, 1e-9);
  EXPECT_NEAR(s.hidden_fraction, 8.0 / 14.0, 1e-9);
  EXPECT_EQ(DDPTimeline().summary().hidden_fraction, 1.0);  // nothing recorded
}

}  // namespace
}  // namespace ath::dist::testing
