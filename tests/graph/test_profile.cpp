// Executor profiling: per-node times accumulate over the runs made while it is on, pairs are
// charged to their first node, and the report names the ops and nodes that took the time.
#include <gtest/gtest.h>

#include "athanor/athanor.h"
#include "athanor/graph/executor.h"
#include "athanor/graph/profile.h"

namespace ath::graph {
namespace {

TEST(Profile, AccumulatesPerNodeOverTheProfiledRunsOnly) {
  // A 256^3 product and an exp of 8 values.
  Graph g;
  const ValueId a = g.add_argument({{256, 256}, kFloat32});
  const ValueId s = g.add_argument({{8}, kFloat32});
  const ValueId m = g.add_node(op_mm(), NoAttrs{}, {a, a})[0];
  const ValueId e = g.add_node(op_exp(), NoAttrs{}, {s})[0];
  g.outputs = {m, e};
  Executor exec(g);
  const Tensor x = randn({256, 256}), y = randn({8});
  exec.run({x, y});  // not profiled
  EXPECT_EQ(exec.profile().runs, 0);
  exec.set_profiling(true);
  for (int i = 0; i < 4; ++i) exec.run({x, y});
  exec.set_profiling(false);
  exec.run({x, y});  // not profiled either
  const NodeProfile& p = exec.profile();
  EXPECT_EQ(p.runs, 4);
  ASSERT_EQ(p.seconds.size(), 2u);
  // (No ranking asserted: a busy host can stall any node longer than the product takes.)
  EXPECT_GT(p.seconds[0], 0.0);
  EXPECT_GT(p.seconds[1], 0.0);
  EXPECT_GE(p.run_seconds, p.seconds[0] + p.seconds[1]);
  EXPECT_FALSE(p.paired[0]);

  // By op: one line each, costliest first, per run.
  const std::vector<OpTime> ops = profile_by_op(g, p);
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_GE(ops[0].seconds_per_run, ops[1].seconds_per_run);
  EXPECT_NEAR(ops[0].seconds_per_run + ops[1].seconds_per_run, (p.seconds[0] + p.seconds[1]) / 4,
              1e-12);
  EXPECT_EQ(ops[0].nodes + ops[1].nodes, 2);

  const std::string report = profile_report(g, p, 1);
  EXPECT_NE(report.find("4 runs"), std::string::npos) << report;
  EXPECT_NE(report.find("mm "), std::string::npos) << report;
  EXPECT_NE(report.find("exp "), std::string::npos) << report;
  EXPECT_NE(report.find("the 1 costliest nodes"), std::string::npos) << report;
  // The costliest node, with its line of the text form.
  const std::string top =
      p.seconds[0] >= p.seconds[1] ? "[0] %2 = mm(%0, %0) f32[256,256]" : "[1] %3 = exp(%1) f32[8]";
  EXPECT_NE(report.find(top), std::string::npos) << report;

  // Turning it on again starts a new profile.
  exec.set_profiling(true);
  EXPECT_EQ(exec.profile().runs, 0);
  EXPECT_EQ(exec.profile().seconds[0], 0.0);
  EXPECT_EQ(profile_report(g, exec.profile()), "profile: no profiled runs\n");
}

TEST(Profile, APairIsOneIntervalChargedToItsFirstNode) {
  Graph g;
  const ValueId x = g.add_argument({{64, 64}, kFloat32});
  const ValueId m = g.add_node(op_mm(), NoAttrs{}, {x, x})[0];
  const ValueId e = g.add_node(op_exp(), NoAttrs{}, {x})[0];
  g.outputs = {m, e};
  const std::vector<int32_t> pairs{0};
  Executor exec(g, pairs);
  exec.set_profiling(true);
  const Tensor in = randn({64, 64});
  exec.run({in});
  const NodeProfile& p = exec.profile();
  EXPECT_TRUE(p.paired[0]);
  EXPECT_GT(p.seconds[0], 0.0);
  EXPECT_EQ(p.seconds[1], 0.0);
  EXPECT_NE(profile_report(g, p).find("mm (pair)"), std::string::npos);
}

// With the machine's limits, each op and node gets its rates and its distance from its floor.
// A hand-made profile, so the figures are exact: a 128^3 product in 1 ms, an exp of 8 floats in
// 0.1 ms, a run of 1.2 ms; a GEMM rate of 8.388608 GFLOP/s (the product's 4.194304 MFLOP in
// 0.5 ms) and 1 GB/s.
TEST(Profile, LimitsGiveEachKernelsRateAndTheRunsFloor) {
  Graph g;
  const ValueId a = g.add_argument({{128, 128}, kFloat32});
  const ValueId s = g.add_argument({{8}, kFloat32});
  const ValueId m = g.add_node(op_mm(), NoAttrs{}, {a, a})[0];
  const ValueId e = g.add_node(op_exp(), NoAttrs{}, {s})[0];
  g.outputs = {m, e};
  NodeProfile p{
      .seconds = {1e-3, 1e-4}, .paired = {false, false}, .runs = 1, .run_seconds = 1.2e-3};
  const MachineLimits limits{.gemm_flops = 8.388608e9, .bytes_per_s = 1e9};
  const std::string report = profile_report(g, p, 2, limits);
  // mm: 4.2 GFLOP/s, half the GEMM rate; its 196,608 bytes at 0.2 GB/s; floor 0.5 ms of 1 ms.
  EXPECT_NE(report.find("      4.2   50.0%      0.2   50.0%"), std::string::npos) << report;
  // exp: no products; 64 bytes in 0.1 ms, its floor 64 ns.
  EXPECT_NE(report.find("        -       -      0.0    0.1%"), std::string::npos) << report;
  EXPECT_NE(report.find("products: 1000.0 us (83.3%) at 4.2 GFLOP/s, 50.0% of the GEMM rate"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("floor: 500.1 us per run"), std::string::npos) << report;
  EXPECT_NE(report.find("the run took 2.40x that"), std::string::npos) << report;
  // The costliest node's line carries the same columns.
  EXPECT_NE(report.find("   50.0%      0.2   50.0%  [0] %2 = mm(%0, %0) f32[128,128]"),
            std::string::npos)
      << report;
  // Without limits, no rate columns.
  EXPECT_EQ(profile_report(g, p, 2).find("GFLOP/s"), std::string::npos);

  // Run as a pair, the interval holds both nodes' work: the floor of the two together is the
  // product's 0.5 ms (their 196,672 bytes take 0.2 ms), counted once.
  const NodeProfile pair{
      .seconds = {1e-3, 0.0}, .paired = {true, false}, .runs = 1, .run_seconds = 1.2e-3};
  const std::string paired = profile_report(g, pair, 2, limits);
  EXPECT_NE(paired.find("mm (pair)"), std::string::npos) << paired;
  EXPECT_NE(paired.find("floor: 500.0 us per run"), std::string::npos) << paired;
  EXPECT_NE(paired.find("the other nodes: 0.0 us"), std::string::npos) << paired;
}

}  // namespace
}  // namespace ath::graph
