// The IR's text form, its Graphviz dump and the verifier on hand-built graphs.
#include <gtest/gtest.h>

#include "athanor/athanor.h"
#include "athanor/graph/executor.h"
#include "athanor/graph/graph.h"
#include "athanor/graph/verify.h"
#include "support/expect_error.h"

namespace ath::graph {
namespace {

TEST(GraphIr, TextFormNamesEveryValueWithItsType) {
  Graph g;
  const ValueId x = g.add_argument({{2, 3}, kFloat32});
  const ValueId c = g.add_constant(full({}, 2.0));
  const ValueId y = g.add_node(op_mul(), NoAttrs{}, {x, c})[0];
  const ValueId z = g.add_node(op_relu(), NoAttrs{}, {y})[0];
  g.outputs.push_back(z);
  EXPECT_EQ(g.to_text(),
            "graph(%0: f32[2,3] arg0, %1: f32[] const0)\n"
            "  %2 = mul(%0, %1) f32[2,3]\n"
            "  %3 = relu(%2) f32[2,3]\n"
            "  return (%3)\n");
  const std::string dot = g.to_dot();
  EXPECT_NE(dot.find("n0 [label=\"mul\"]"), std::string::npos);
  EXPECT_NE(dot.find("n1 -> out"), std::string::npos);
  verify(g);
}

TEST(GraphIr, ExecutorRunsAHandBuiltGraph) {
  Graph g;
  const ValueId x = g.add_argument({{3}, kFloat32});
  const ValueId c = g.add_constant(full({}, 2.0));
  const ValueId y = g.add_node(op_mul(), NoAttrs{}, {x, c})[0];
  g.outputs.push_back(g.add_node(op_neg(), NoAttrs{}, {y})[0]);
  Executor exec(g);
  const std::vector<Tensor> out = exec.run(std::vector<Tensor>{from_vector<float>({1, -2, 3})});
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{-2, 4, -6}));
  testing::expect_error_naming(
      [&] {
        exec.run(std::vector<Tensor>{from_vector<float>({1, 2})});
      },
      "argument 0 is f32[2], the graph was made for f32[3]");
}

TEST(GraphIr, VerifierRejectsAUseBeforeItsDefinition) {
  Graph g;
  const ValueId x = g.add_argument({{3}, kFloat32});
  const ValueId y = g.add_node(op_neg(), NoAttrs{}, {x})[0];
  const ValueId z = g.add_node(op_neg(), NoAttrs{}, {y})[0];
  g.outputs.push_back(z);
  std::swap(g.nodes[0], g.nodes[1]);
  testing::expect_error_naming([&] { verify(g); }, "reads %1 before it is defined");
}

TEST(GraphIr, VerifierRejectsBrokenRecords) {
  auto base = [] {
    Graph g;
    const ValueId x = g.add_argument({{3}, kFloat32});
    g.outputs.push_back(g.add_node(op_neg(), NoAttrs{}, {x})[0]);
    return g;
  };
  {
    Graph g = base();
    g.nodes[0].inputs.push_back(0);
    testing::expect_error_naming([&] { verify(g); }, "has 2 inputs, its op takes 1");
  }
  {
    Graph g = base();
    g.outputs.push_back(17);
    testing::expect_error_naming([&] { verify(g); }, "refers to %17, which does not exist");
  }
  {
    Graph g = base();
    g.values[1].node = 5;
    testing::expect_error_naming([&] { verify(g); }, "its record names node 5");
  }
  {
    Graph g = base();
    g.nodes[0].write = WriteKind::IntoSelf;
    testing::expect_error_naming([&] { verify(g); }, "no fresh outputs");
  }
  {
    Graph g = base();
    g.grads.push_back({3, 1});
    testing::expect_error_naming([&] { verify(g); }, "state slot 3, of 0");
  }
}

}  // namespace
}  // namespace ath::graph
