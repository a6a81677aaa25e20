// Each pass on small hand-built graphs: the text form before and after, the verifier after, and
// the executor giving the same results before and after.
#include <gtest/gtest.h>

#include "athanor/athanor.h"
#include "athanor/graph/executor.h"
#include "athanor/graph/passes.h"
#include "athanor/graph/verify.h"
#include "athanor/ops/activations.h"
#include "athanor/ops/epilogue.h"
#include "graph_test_util.h"
#include "support/expect_error.h"

namespace ath::graph {
namespace {

std::vector<float> run1(const Graph& g, const Tensor& x) {
  Executor exec(g);
  return exec.run(std::vector<Tensor>{x})[0].to_vector<float>();
}

TEST(GraphPasses, DeadCodeEliminationKeepsWhatReachesAnOutput) {
  Graph g;
  const ValueId x = g.add_argument({{3}, kFloat32});
  const ValueId used = g.add_node(op_neg(), NoAttrs{}, {x})[0];
  const ValueId unused = g.add_node(op_exp(), NoAttrs{}, {x})[0];
  g.add_node(op_relu(), NoAttrs{}, {unused});
  g.outputs.push_back(used);
  EXPECT_EQ(eliminate_dead_code(g), 2);
  verify(g);
  EXPECT_EQ(g.to_text(),
            "graph(%0: f32[3] arg0)\n"
            "  %1 = neg(%0) f32[3]\n"
            "  return (%1)\n");
}

TEST(GraphPasses, DeadCodeEliminationKeepsWritesAndRandomDraws) {
  Graph g;
  const ValueId x = g.add_argument({{3}, kFloat32});
  const ValueId p = g.add_state(zeros({3}));
  // An in-place write into state: its new version is read by nothing, and it stays.
  test_util::add_into(g, p, x);
  g.add_node(op_philox_seed_offset(), PhiloxDrawAttrs{.words = 4}, {});
  g.outputs.push_back(x);
  verify(g);
  EXPECT_EQ(eliminate_dead_code(g), 0);
  EXPECT_EQ(g.nodes.size(), 2u);
}

TEST(GraphPasses, CommonSubexpressionsMergeWhenNothingWritesBetween) {
  Graph g;
  const ValueId x = g.add_argument({{3}, kFloat32});
  const ValueId a = g.add_node(op_exp(), NoAttrs{}, {x})[0];
  const ValueId b = g.add_node(op_exp(), NoAttrs{}, {x})[0];
  g.outputs.push_back(g.add_node(op_add(), AlphaAttrs{}, {a, b})[0]);
  const std::vector<float> before = run1(g, from_vector<float>({0, 1, 2}));
  EXPECT_EQ(eliminate_common_subexpressions(g), 1);
  verify(g);
  EXPECT_EQ(g.to_text(),
            "graph(%0: f32[3] arg0)\n"
            "  %1 = exp(%0) f32[3]\n"
            "  %2 = add(%1, %1) f32[3]\n"
            "  return (%2)\n");
  EXPECT_EQ(run1(g, from_vector<float>({0, 1, 2})), before);
}

TEST(GraphPasses, CommonSubexpressionsStayApartAcrossAWriteToTheirInput) {
  Graph g;
  const ValueId x = g.add_argument({{3}, kFloat32});
  const ValueId s = g.add_state(ones({3}));
  const ValueId a = g.add_node(op_mul(), NoAttrs{}, {x, s})[0];
  // s += x, in place, between the two reads.
  test_util::add_into(g, s, x);
  // The same op on the same *value* %1, but its buffer was written since.
  const NoAttrs none{};
  Node again{.op = &op_mul(), .attrs = op_mul().clone_attrs(&none), .inputs = {x, s}};
  Value out{.meta = g.value(a).meta, .strides = g.value(a).strides};
  out.node = 2;
  const ValueId b = g.add_value(out);
  again.outputs = {b};
  g.nodes.push_back(again);
  g.outputs = {a, b};
  verify(g);
  EXPECT_EQ(eliminate_common_subexpressions(g), 0);
}

TEST(GraphPasses, ConstantFoldingRunsConstantNodesOnce) {
  Graph g;
  const ValueId x = g.add_argument({{3}, kFloat32});
  const ValueId c = g.add_constant(full({}, 2.0));
  const ValueId c2 = g.add_node(op_mul(), NoAttrs{}, {c, c})[0];  // 4, known now
  g.outputs.push_back(g.add_node(op_mul(), NoAttrs{}, {x, c2})[0]);
  EXPECT_EQ(fold_constants(g), 1);
  verify(g);
  EXPECT_EQ(g.to_text(),
            "graph(%0: f32[3] arg0, %1: f32[] const0)\n"
            "  %2 = mul(%0, %1) f32[3]\n"
            "  return (%2)\n");
  EXPECT_EQ(g.constants[0].item<float>(), 4.0f);
  EXPECT_EQ(run1(g, from_vector<float>({1, 2, 3})), (std::vector<float>{4, 8, 12}));
}

TEST(GraphPasses, SimplifyDropsMultiplyByOneAndDoubleNegation) {
  Graph g;
  const ValueId x = g.add_argument({{3}, kFloat32});
  const ValueId one = g.add_constant(full({}, 1.0));
  const ValueId m = g.add_node(op_mul(), NoAttrs{}, {one, x})[0];
  const ValueId d = g.add_node(op_div(), NoAttrs{}, {m, one})[0];
  const ValueId n1 = g.add_node(op_neg(), NoAttrs{}, {d})[0];
  const ValueId n2 = g.add_node(op_neg(), NoAttrs{}, {n1})[0];
  g.outputs.push_back(g.add_node(op_exp(), NoAttrs{}, {n2})[0]);
  const Tensor in = from_vector<float>({-0.0f, 1.5f, -2.0f});
  const std::vector<float> before = run1(g, in);
  EXPECT_EQ(simplify(g), 3);  // mul, div, the outer neg
  verify(g);
  EXPECT_EQ(eliminate_dead_code(g), 1);  // the inner neg, now unread
  EXPECT_EQ(g.to_text(),
            "graph(%0: f32[3] arg0)\n"
            "  %1 = exp(%0) f32[3]\n"
            "  return (%1)\n");
  EXPECT_EQ(run1(g, in), before);
}

TEST(GraphPasses, SimplifyRemovesViewChainsThatReturnToTheirInput) {
  Graph g;
  const ValueId x = g.add_argument({{2, 3}, kFloat32});
  const ValueId t = g.add_node(op_permute(), PermuteAttrs{.dims = {1, 0}}, {x})[0];
  const ValueId tt = g.add_node(op_permute(), PermuteAttrs{.dims = {1, 0}}, {t})[0];
  const ValueId r = g.add_node(op_view(), ShapeAttrs{.shape = {6}}, {tt})[0];
  const ValueId rr = g.add_node(op_view(), ShapeAttrs{.shape = {2, 3}}, {r})[0];
  EXPECT_EQ(g.value(t).strides, (Strides{1, 3}));
  g.outputs.push_back(g.add_node(op_exp(), NoAttrs{}, {rr})[0]);
  g.outputs.push_back(g.add_node(op_exp(), NoAttrs{}, {t})[0]);  // t itself stays
  EXPECT_EQ(simplify(g), 2);  // tt (back to x) and rr (back to x); r is a different shape
  eliminate_dead_code(g);
  verify(g);
  EXPECT_EQ(g.count("permute"), 1);
  EXPECT_EQ(g.count("view"), 0);
  const Tensor in = randn({2, 3});
  Executor exec(g);
  const std::vector<Tensor> out = exec.run(std::vector<Tensor>{in});
  EXPECT_EQ(out[0].to_vector<float>(), exp(in).to_vector<float>());
  EXPECT_EQ(out[1].to_vector<float>(), exp(in.t()).to_vector<float>());
}

TEST(GraphPasses, SimplifyLeavesWhatIsNotAnIdentity) {
  Graph g;
  const ValueId x = g.add_argument({{3}, kFloat32});
  const ValueId i = g.add_argument({{3}, kInt32});
  const ValueId s = g.add_argument({{1}, kFloat32});
  const ValueId one = g.add_constant(full({}, 1.0));
  const ValueId ones3 = g.add_constant(ones({3}));
  const ValueId two = g.add_constant(full({}, 2.0));
  const ValueId zero = g.add_constant(full({}, 0.0));
  g.outputs.push_back(g.add_node(op_mul(), NoAttrs{}, {x, two})[0]);      // not 1
  g.outputs.push_back(g.add_node(op_mul(), NoAttrs{}, {s, ones3})[0]);    // broadcasts [1] -> [3]
  g.outputs.push_back(g.add_node(op_mul(), NoAttrs{}, {i, one})[0]);      // int32 -> float32
  g.outputs.push_back(g.add_node(op_div(), NoAttrs{}, {one, x})[0]);      // 1 / x
  g.outputs.push_back(g.add_node(op_add(), AlphaAttrs{}, {x, zero})[0]);  // -0 + 0 is +0
  // x * 1 read after a write to x: the product holds x's old contents.
  const ValueId p = g.add_state(ones({3}));
  const ValueId kept = g.add_node(op_mul(), NoAttrs{}, {p, one})[0];
  test_util::add_into(g, p, x);
  g.outputs.push_back(g.add_node(op_exp(), NoAttrs{}, {kept})[0]);
  verify(g);
  EXPECT_EQ(simplify(g), 0);
  // And a result that is itself an output keeps its own handle.
  Graph h;
  const ValueId y = h.add_argument({{3}, kFloat32});
  h.outputs.push_back(h.add_node(op_mul(), NoAttrs{}, {y, h.add_constant(full({}, 1.0))})[0]);
  EXPECT_EQ(simplify(h), 0);
}

TEST(GraphPasses, EpilogueFusesAReluIntoTheProductOrConvolutionItAloneReads) {
  Graph g;
  const ValueId x = g.add_argument({{4, 8}, kFloat32});
  const ValueId w = g.add_argument({{3, 8}, kFloat32});
  const ValueId b = g.add_argument({{3}, kFloat32});
  const ValueId img = g.add_argument({{1, 2, 5, 5}, kFloat32});
  const ValueId k = g.add_argument({{3, 2, 3, 3}, kFloat32});
  const ValueId h = g.add_node(op_linear(), NoAttrs{}, {x, w, b})[0];
  const ValueId y = g.add_node(op_relu(), NoAttrs{}, {h})[0];
  const ConvAttrs pad1{.pad_l = {1, 1}, .pad_r = {1, 1}};
  const ValueId c = g.add_node(op_convolution(), pad1, {img, k})[0];
  const ValueId cy = g.add_node(op_relu(), NoAttrs{}, {c})[0];
  // A pre-activation something else reads too stays a linear and a relu.
  const ValueId h2 = g.add_node(op_linear(), NoAttrs{}, {x, w})[0];
  const ValueId y2 = g.add_node(op_relu(), NoAttrs{}, {h2})[0];
  const ValueId both = g.add_node(op_add(), AlphaAttrs{}, {y2, h2})[0];
  g.outputs = {y, cy, both};
  const Tensor xs = randn({4, 8}), ws = randn({3, 8}), bs = randn({3}), is = randn({1, 2, 5, 5}),
               ks = randn({3, 2, 3, 3});
  const std::vector<Tensor> before = Executor(g).run({xs, ws, bs, is, ks});

  EXPECT_EQ(fuse_epilogues(g), 2);
  verify(g);
  EXPECT_EQ(g.count("linear_relu"), 1);
  EXPECT_EQ(g.count("convolution_relu"), 1);
  EXPECT_EQ(g.count("linear"), 1);
  EXPECT_EQ(g.count("relu"), 1);
  const std::vector<Tensor> after = Executor(g).run({xs, ws, bs, is, ks});
  for (std::size_t i = 0; i < before.size(); ++i) EXPECT_TRUE(equal(before[i], after[i])) << i;
  EXPECT_TRUE(equal(after[0], relu(linear(xs, ws, bs))));
  EXPECT_EQ(fuse_epilogues(g), 0);  // nothing left to fuse
}

// conv -> relu -> max_pool's backward: the relu mask on the pool's scatter becomes one
// max_pool2d_backward_masked, bit-identical; a mask on another tensor, or a scatter something
// else reads, stays as it was.
TEST(GraphPasses, PoolMaskFoldsAReluMaskIntoTheMaxPoolScatter) {
  Graph g;
  const Shape in{2, 3, 6, 6}, out{2, 3, 3, 3};
  const ValueId y = g.add_argument({in, kFloat32});
  const ValueId other = g.add_argument({in, kFloat32});
  const ValueId gp = g.add_argument({out, kFloat32});
  const auto pool =
      g.add_node(op_max_pool2d(), MaxPool2dAttrs{.kernel = {2, 2}, .stride = {2, 2}}, {y});
  const ValueId zero = g.add_constant(zeros({}));
  auto scatter = [&] {
    return g.add_node(op_max_pool2d_backward(), PoolGradAttrs{.input = {6, 6}}, {gp, pool[1]})[0];
  };
  auto mask_of = [&](ValueId v) {
    const ValueId b = g.add_node(op_gt(), NoAttrs{}, {v, zero})[0];
    return g.add_node(op_to_dtype(), ToDTypeAttrs{.dtype = kFloat32}, {b})[0];
  };
  const ValueId fused = g.add_node(op_mul(), NoAttrs{}, {scatter(), mask_of(y)})[0];
  const ValueId other_mask = g.add_node(op_mul(), NoAttrs{}, {mask_of(other), scatter()})[0];
  const ValueId shared = scatter();
  const ValueId read_twice = g.add_node(op_mul(), NoAttrs{}, {shared, mask_of(y)})[0];
  g.outputs = {fused, other_mask, read_twice, shared};
  const Tensor ys = randn(in), os = randn(in), gs = randn(out);
  const std::vector<Tensor> before = Executor(g).run({ys, os, gs});

  EXPECT_EQ(fuse_pool_masks(g), 1);
  verify(g);
  EXPECT_EQ(g.count("max_pool2d_backward_masked"), 1);
  EXPECT_EQ(g.count("max_pool2d_backward"), 2);
  EXPECT_EQ(g.count("mul"), 2);
  const std::vector<Tensor> after = Executor(g).run({ys, os, gs});
  for (std::size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(before[i].to_vector<float>(), after[i].to_vector<float>()) << i;
  }
  EXPECT_EQ(fuse_pool_masks(g), 0);
}

// A layer_norm_backward whose dx meets a residual gradient in an add: the two become one
// layer_norm_backward_add, bit-identical, in either operand order; a dx read twice stays.
TEST(GraphPasses, NormAddAddsTheResidualGradientWhereDxIsMade) {
  Graph g;
  const Shape s{4, 3, 8};
  const ValueId x = g.add_argument({s, kFloat32});
  const ValueId w = g.add_argument({{8}, kFloat32});
  const ValueId gy = g.add_argument({s, kFloat32});
  const ValueId r = g.add_argument({s, kFloat32});
  const auto fwd =
      g.add_node(op_layer_norm(), LayerNormAttrs{.normalized_shape = {8}, .has_weight = true},
                 {x, w, g.add_constant(empty({0}))});
  auto backward = [&] {
    return g.add_node(op_layer_norm_backward(),
                      LayerNormBackwardAttrs{.normalized_shape = {8}, .has_weight = true},
                      {gy, x, fwd[1], fwd[2], w});
  };
  const auto b1 = backward();
  const ValueId s1 = g.add_node(op_add(), AlphaAttrs{}, {r, b1[0]})[0];
  const auto b2 = backward();
  const ValueId s2 = g.add_node(op_add(), AlphaAttrs{}, {b2[0], s1})[0];
  const auto b3 = backward();  // dx read twice: stays
  const ValueId s3 = g.add_node(op_add(), AlphaAttrs{}, {b3[0], b3[0]})[0];
  const auto b4 = backward();  // alpha 2: stays
  const ValueId s4 = g.add_node(op_add(), AlphaAttrs{.alpha = 2}, {r, b4[0]})[0];
  g.outputs = {s2, b1[1], b2[2], s3, s4};
  const Tensor xs = randn(s), ws = randn({8}), gs = randn(s), rs = randn(s);
  const std::vector<Tensor> before = Executor(g).run({xs, ws, gs, rs});

  EXPECT_EQ(fuse_norm_adds(g), 2);
  verify(g);
  EXPECT_EQ(g.count("layer_norm_backward_add"), 2);
  EXPECT_EQ(g.count("layer_norm_backward"), 2);
  EXPECT_EQ(g.count("add"), 2);
  const std::vector<Tensor> after = Executor(g).run({xs, ws, gs, rs});
  for (std::size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(before[i].to_vector<float>(), after[i].to_vector<float>()) << i;
  }
  EXPECT_EQ(fuse_norm_adds(g), 0);
}

// A recomputed GELU, a product that reads it, and the GELU's gradient: gelu_pair makes one
// gelu_with_backward where the gradient was made and moves the product below it, bit-identical.
// A GELU of another tensor, and a pair whose gradient is made from the GELU, stay. Where the
// gradient is made after the product, fusing would keep the GELU and the gradient alive at once
// and grow the arena: that pair stays too.
TEST(GraphPasses, GeluPairMakesTheRecomputedGeluWithItsGradient) {
  for (const bool gradient_first : {true, false}) {
    SCOPED_TRACE(gradient_first ? "gradient made first" : "gradient made last");
    Graph g;
    const Shape s{8, 16};
    const ValueId x = g.add_argument({s, kFloat32});
    const ValueId other = g.add_argument({s, kFloat32});
    const ValueId w = g.add_argument({{16, 16}, kFloat32});
    const ValueId gy = g.add_argument({s, kFloat32});
    auto gradient = [&] { return g.add_node(op_mm(), NoAttrs{}, {gy, w})[0]; };
    ValueId dh = gradient_first ? gradient() : kNoValue;
    const ValueId r = g.add_node(op_gelu(), GeluAttrs{}, {x})[0];
    const ValueId prod = g.add_node(op_mm(), NoAttrs{}, {r, w})[0];  // the weight gradient
    if (!gradient_first) dh = gradient();
    const ValueId dx = g.add_node(op_gelu_backward(), GeluAttrs{}, {dh, x})[0];
    const ValueId r2 = g.add_node(op_gelu(), GeluAttrs{}, {other})[0];  // no partner
    // A gradient made from the GELU itself: r3 must come first, so it stays.
    const ValueId r3 = g.add_node(op_gelu(), GeluAttrs{}, {gy})[0];
    const ValueId dy3 = g.add_node(op_gelu_backward(), GeluAttrs{}, {r3, gy})[0];
    g.outputs = {prod, dx, r2, dy3};
    const Tensor xs = randn(s), os = randn(s), ws = randn({16, 16}), gs = randn(s);
    const std::vector<Tensor> before = Executor(g).run({xs, os, ws, gs});
    const int64_t arena_before = plan_memory(g).arena_bytes;

    EXPECT_EQ(fuse_gelu_pairs(g), gradient_first ? 1 : 0);
    verify(g);
    EXPECT_LE(plan_memory(g).arena_bytes, arena_before);
    EXPECT_EQ(g.count("gelu_with_backward"), gradient_first ? 1 : 0);
    EXPECT_EQ(g.count("gelu"), gradient_first ? 2 : 3);
    EXPECT_EQ(g.count("gelu_backward"), gradient_first ? 1 : 2);
    if (gradient_first) {  // the product that read the recomputed GELU runs after the fused node
      int64_t fused_at = -1, product_at = -1;
      for (std::size_t k = 0; k < g.nodes.size(); ++k) {
        if (g.nodes[k].op == &op_gelu_with_backward()) fused_at = static_cast<int64_t>(k);
        if (g.nodes[k].op == &op_mm() && fused_at >= 0 && product_at < 0)
          product_at = static_cast<int64_t>(k);
      }
      EXPECT_GT(product_at, fused_at);
    }
    const std::vector<Tensor> after = Executor(g).run({xs, os, ws, gs});
    for (std::size_t i = 0; i < before.size(); ++i) EXPECT_TRUE(equal(before[i], after[i])) << i;
    EXPECT_EQ(fuse_gelu_pairs(g), 0);
  }
}

TEST(GraphPasses, RunPassesReportsEachAndRejectsUnknownNames) {
  Graph g;
  const ValueId x = g.add_argument({{3}, kFloat32});
  const ValueId a = g.add_node(op_exp(), NoAttrs{}, {x})[0];
  const ValueId b = g.add_node(op_exp(), NoAttrs{}, {x})[0];
  g.add_node(op_neg(), NoAttrs{}, {b});
  g.outputs.push_back(g.add_node(op_add(), AlphaAttrs{}, {a, b})[0]);
  const PassReport r = run_passes(g);
  EXPECT_EQ(r.nodes_before, 4);
  // linear, gelu, attention, heads, self_attention, select_view, bn_fold, conv_pool,
  // blocked_layout and pack_linear run only with PassOptions::inference.
  ASSERT_EQ(r.passes.size(), pass_names().size() - 10);
  EXPECT_EQ(pass_names().back(), "interop");                 // last: it orders what the others made
  EXPECT_EQ(pass_names()[pass_names().size() - 2], "sink");  // after remat's copies
  EXPECT_EQ(pass_names()[pass_names().size() - 3], "gelu_pair");  // pairs remat's GELU copies
  EXPECT_EQ(pass_names()[pass_names().size() - 4], "remat");
  EXPECT_EQ(r.passes[2].name, "cse");
  EXPECT_EQ(r.passes[2].changed, 1);
  EXPECT_EQ(r.passes[3].name, "log_softmax_nll");
  EXPECT_EQ(r.passes[4].name, "epilogue");
  EXPECT_EQ(r.passes[5].name, "pool_mask");
  EXPECT_EQ(r.passes[6].name, "conv_pool_train");  // after pool_mask, which frees the conv output
  EXPECT_EQ(r.passes[7].name, "norm_add");
  EXPECT_EQ(r.passes[8].name, "fuse");
  EXPECT_EQ(r.passes[8].changed, 0);  // exp has no fused form: add and neg stay single nodes
  EXPECT_EQ(r.passes[9].name, "dce");
  EXPECT_EQ(r.passes[9].changed, 1);
  EXPECT_EQ(r.passes[10].name, "remat");
  EXPECT_EQ(r.passes[11].name, "gelu_pair");
  EXPECT_EQ(r.passes[12].name, "sink");
  EXPECT_EQ(g.nodes.size(), 2u);
  Graph inference = g;
  // remat, gelu_pair and sink work on a training step's backward: an inference graph has none.
  EXPECT_EQ(run_passes(inference, {.inference = true}).passes.size(), pass_names().size() - 3);
  Graph h;
  testing::expect_error_naming([&] { run_passes(h, {.disabled = {"fusion9"}}); },
                               "no pass named 'fusion9'");
  Graph k = h;
  EXPECT_EQ(run_passes(k, {.disabled = {"cse", "dce", "fold", "simplify", "log_softmax_nll",
                                        "epilogue", "pool_mask", "conv_pool_train", "norm_add",
                                        "gelu_pair", "fuse", "remat", "sink", "interop"}})
                .passes.size(),
            0u);
}

}  // namespace
}  // namespace ath::graph
