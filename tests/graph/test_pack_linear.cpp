// The pack_linear pass's epilogues on hand-built graphs: an exact GELU and a residual add that
// read a linear alone (through a reshape, as exporters write a Transformer) become the packed
// primitive's post-ops; an add whose other operand is made after the linear, an add with a
// scale, a GELU beside another reader and the tanh GELU stay nodes. Results before and after
// agree (oneDNN's erf differs from gelu's in the last bits).
#include <gtest/gtest.h>

#include "athanor/athanor.h"
#include "athanor/graph/executor.h"
#include "athanor/graph/passes.h"
#include "athanor/graph/verify.h"
#include "athanor/ops/linear_packed.h"

namespace ath::graph {
namespace {

std::vector<Tensor> run(const Graph& g, const std::vector<Tensor>& args) {
  std::vector<Tensor> out = Executor(g).run(args);
  for (Tensor& t : out) t = t.clone();
  return out;
}

const LinearPackedAttrs& attrs_of(const Node& n) {
  return *static_cast<const LinearPackedAttrs*>(n.attrs.get());
}

ValueId linear_rows(Graph& g, ValueId rows, int64_t in, int64_t out) {
  return g.add_node(op_linear(), NoAttrs{},
                    {rows, g.add_constant(randn({out, in})), g.add_constant(randn({out}))})[0];
}

TEST(PackLinear, GeluAndResidualAfterALinearBecomeItsPostOps) {
  manual_seed(2);
  Graph g;
  const ValueId x = g.add_argument({{2, 3, 8}, kFloat32});
  const ValueId rows = g.add_node(op_view(), ShapeAttrs{.shape = {6, 8}}, {x})[0];
  // h = x + view(linear(gelu(view(linear(rows)))))
  const ValueId up = linear_rows(g, rows, 8, 16);
  const ValueId up3 = g.add_node(op_view(), ShapeAttrs{.shape = {2, 3, 16}}, {up})[0];
  const ValueId act = g.add_node(op_gelu(), GeluAttrs{}, {up3})[0];
  const ValueId act2 = g.add_node(op_view(), ShapeAttrs{.shape = {6, 16}}, {act})[0];
  const ValueId down = linear_rows(g, act2, 16, 8);
  const ValueId down3 = g.add_node(op_view(), ShapeAttrs{.shape = {2, 3, 8}}, {down})[0];
  const ValueId h = g.add_node(op_add(), AlphaAttrs{}, {x, down3})[0];
  g.outputs = {h};
  const std::vector<Tensor> args{randn({2, 3, 8})};
  const std::vector<Tensor> before = run(g, args);

  EXPECT_EQ(pack_linears(g), 2);
  verify(g);
  EXPECT_EQ(g.count("linear_packed"), 2) << g.to_text();
  EXPECT_EQ(g.count("gelu"), 0) << g.to_text();
  EXPECT_EQ(g.count("add"), 0) << g.to_text();
  int gelus = 0, residuals = 0;
  for (const Node& n : g.nodes) {
    if (n.op != &op_linear_packed()) continue;
    gelus += attrs_of(n).gelu;
    residuals += attrs_of(n).residual;
  }
  EXPECT_EQ(gelus, 1);
  EXPECT_EQ(residuals, 1);
  EXPECT_TRUE(allclose(run(g, args)[0], before[0], {.rtol = 1e-5, .atol = 1e-5}));
}

TEST(PackLinear, EpiloguesThatCannotMoveStayNodes) {
  manual_seed(3);
  Graph g;
  const ValueId x = g.add_argument({{4, 8}, kFloat32});
  // The add's other operand is made after the linear: the linear cannot read it.
  const ValueId a = linear_rows(g, x, 8, 8);
  const ValueId later = g.add_node(op_relu(), NoAttrs{}, {x})[0];
  const ValueId s1 = g.add_node(op_add(), AlphaAttrs{}, {a, later})[0];
  // An add that scales the linear (a + 2 b).
  const ValueId b = linear_rows(g, x, 8, 8);
  const ValueId s2 = g.add_node(op_add(), AlphaAttrs{.alpha = 2.0}, {x, b})[0];
  // A GELU beside another reader of the product, and the tanh GELU.
  const ValueId c = linear_rows(g, x, 8, 8);
  const ValueId g1 = g.add_node(op_gelu(), GeluAttrs{}, {c})[0];
  const ValueId d = linear_rows(g, x, 8, 8);
  const ValueId g2 = g.add_node(op_gelu(), GeluAttrs{.approximate = GeluApprox::Tanh}, {d})[0];
  g.outputs = {s1, s2, g1, c, g2};
  const std::vector<Tensor> args{randn({4, 8})};
  const std::vector<Tensor> before = run(g, args);

  EXPECT_EQ(pack_linears(g), 4);
  verify(g);
  for (const Node& n : g.nodes) {
    if (n.op == &op_linear_packed()) {
      EXPECT_FALSE(attrs_of(n).gelu || attrs_of(n).residual);
    }
  }
  EXPECT_EQ(g.count("add"), 2);
  EXPECT_EQ(g.count("gelu"), 2);
  const std::vector<Tensor> after = run(g, args);
  for (std::size_t i = 0; i < before.size(); ++i)
    EXPECT_TRUE(allclose(after[i], before[i], {.rtol = 1e-5, .atol = 1e-5})) << i;
}

}  // namespace
}  // namespace ath::graph
