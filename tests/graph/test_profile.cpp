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

}  // namespace
}  // namespace ath::graph
