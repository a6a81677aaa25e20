// The "sink" pass: a node whose result nothing reads until after the arena's peak moves down to
// its first reader (with the views of it made on the way), which lowers the peak and keeps
// every result; a node that something in between depends on, or that writes memory, stays.
#include <gtest/gtest.h>

#include "athanor/athanor.h"
#include "athanor/graph/executor.h"
#include "athanor/graph/memory_plan.h"
#include "athanor/graph/passes.h"
#include "athanor/graph/verify.h"

namespace ath::graph {
namespace {

constexpr int64_t kN = 1000;

// e = exp(x) (read only at the end, through a view); a = sin(x); b = cos(x); c = a * b;
// out = view(e) * c. Three buffers are live at the cos (e, a, b); with the exp and its view
// moved down to the last multiply, two.
struct Case {
  Graph g;
  ValueId x = kNoValue, e = kNoValue;
};

Case made_early_read_late() {
  Case c;
  c.x = c.g.add_argument({{10, 100}, kFloat32});
  c.e = c.g.add_node(op_exp(), NoAttrs{}, {c.x})[0];
  const ValueId flat = c.g.add_node(op_view(), ShapeAttrs{.shape = {kN}}, {c.e})[0];
  const ValueId a = c.g.add_node(op_sin(), NoAttrs{}, {c.x})[0];
  const ValueId b = c.g.add_node(op_cos(), NoAttrs{}, {c.x})[0];
  const ValueId ab = c.g.add_node(op_mul(), NoAttrs{}, {a, b})[0];
  const ValueId ab_flat = c.g.add_node(op_view(), ShapeAttrs{.shape = {kN}}, {ab})[0];
  c.g.outputs = {c.g.add_node(op_mul(), NoAttrs{}, {flat, ab_flat})[0]};
  return c;
}

Tensor run_graph(const Graph& g, const Tensor& input) {
  return Executor(g, plan_memory(g)).run({input})[0];
}

TEST(Sink, MovesANodeMadeEarlyAndReadLateDownToItsReader) {
  Case c = made_early_read_late();
  const Tensor input = randn({10, 100});
  const Tensor expected = run_graph(c.g, input);
  const int64_t before = plan_memory(c.g).arena_bytes;
  EXPECT_EQ(sink_producers(c.g), 1);
  verify(c.g);
  EXPECT_LT(plan_memory(c.g).arena_bytes, before);
  // exp and its view now come right before the multiply that reads them.
  const auto n = static_cast<int32_t>(c.g.nodes.size());
  EXPECT_EQ(c.g.value(c.e).node, n - 3);
  EXPECT_EQ(c.g.nodes[static_cast<std::size_t>(n - 2)].op->name, "view");
  EXPECT_TRUE(equal(run_graph(c.g, input), expected));
  EXPECT_EQ(sink_producers(c.g), 0);  // nothing left to lower
}

TEST(Sink, LeavesANodeThatSomethingInBetweenDependsOn) {
  // The sin now reads e's view: e is read before the peak, so it stays where it is.
  Graph g;
  const ValueId x = g.add_argument({{kN}, kFloat32});
  const ValueId e = g.add_node(op_exp(), NoAttrs{}, {x})[0];
  const ValueId a = g.add_node(op_sin(), NoAttrs{}, {e})[0];
  const ValueId b = g.add_node(op_cos(), NoAttrs{}, {x})[0];
  const ValueId ab = g.add_node(op_mul(), NoAttrs{}, {a, b})[0];
  g.outputs = {g.add_node(op_mul(), NoAttrs{}, {e, ab})[0]};
  const std::string before = g.to_text();
  EXPECT_EQ(sink_producers(g), 0);
  EXPECT_EQ(g.to_text(), before);
}

TEST(Sink, RunsInTheCompilerAndCanBeSwitchedOff) {
  Case on = made_early_read_late(), off = made_early_read_late();
  const PassReport r = run_passes(on.g, {.disabled = {"interop"}});
  ASSERT_FALSE(r.passes.empty());
  EXPECT_EQ(r.passes.back().name, "sink");
  EXPECT_EQ(r.passes.back().changed, 1);
  run_passes(off.g, {.disabled = {"interop", "sink"}});
  EXPECT_LT(plan_memory(on.g).arena_bytes, plan_memory(off.g).arena_bytes);
}

}  // namespace
}  // namespace ath::graph
