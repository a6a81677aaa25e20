// The inference passes (linear, gelu, attention, heads, select_view) on small hand-built graphs:
// what each rewrites, what it leaves alone, and the results before and after, replayed through
// a memory-planned executor (the arena is where a wrong buffer owner would show).
#include <gtest/gtest.h>

#include <limits>

#include "athanor/athanor.h"
#include "athanor/graph/executor.h"
#include "athanor/graph/memory_plan.h"
#include "athanor/graph/passes.h"
#include "athanor/graph/verify.h"
#include "athanor/ops/attention.h"

namespace ath::graph {
namespace {

std::vector<Tensor> run_planned(const Graph& g, const std::vector<Tensor>& args) {
  const MemoryPlan plan = plan_memory(g);
  check_plan(g, plan);
  const Executor exec(g, plan);
  std::vector<Tensor> out = exec.run(args);
  for (Tensor& t : out) t = t.clone();
  return out;
}

// Runs `pass`, then dce, and checks the graph still verifies; returns what the pass reported.
int apply(Graph& g, int (*pass)(Graph&)) {
  const int changed = pass(g);
  verify(g);
  eliminate_dead_code(g);
  verify(g);
  return changed;
}

bool bits_equal(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].to_vector<float>() != b[i].to_vector<float>()) return false;
  return true;
}

TEST(InferencePasses, MatmulAndBiasAddBecomeOneLinear) {
  manual_seed(1);
  Graph g;
  const ValueId x = g.add_argument({{2, 3, 8}, kFloat32});
  const ValueId rows = g.add_node(op_view(), ShapeAttrs{.shape = {6, 8}}, {x})[0];
  const ValueId y = g.add_node(op_mm(), NoAttrs{}, {rows, g.add_constant(randn({8, 5}))})[0];
  const ValueId y3 = g.add_node(op_view(), ShapeAttrs{.shape = {2, 3, 5}}, {y})[0];
  const ValueId bias = g.add_constant(randn({1, 5}));
  const ValueId s = g.add_node(op_add(), AlphaAttrs{}, {bias, y3})[0];
  // A product without a bias add, and one whose add is not a bias (a full [6, 5] addend).
  const ValueId z = g.add_node(op_mm(), NoAttrs{}, {rows, g.add_constant(randn({8, 4}))})[0];
  const ValueId p = g.add_node(op_mm(), NoAttrs{}, {rows, g.add_constant(randn({8, 5}))})[0];
  const ValueId q = g.add_node(op_add(), AlphaAttrs{}, {p, g.add_constant(randn({6, 5}))})[0];
  g.outputs = {s, g.add_node(op_relu(), NoAttrs{}, {z})[0], q};
  const std::vector<Tensor> args{randn({2, 3, 8})};
  const std::vector<Tensor> before = run_planned(g, args);

  EXPECT_EQ(apply(g, fuse_matmul_linear), 3);
  EXPECT_EQ(g.count("linear"), 3) << g.to_text();
  EXPECT_EQ(g.count("mm"), 0);
  EXPECT_EQ(g.count("add"), 1) << g.to_text();  // the full addend's
  EXPECT_TRUE(bits_equal(run_planned(g, args), before));
  // The weights are now [out, in] constants; the bias [1, 5] became [5].
  for (const Node& n : g.nodes) {
    if (n.op != &op_linear()) continue;
    EXPECT_EQ(g.value(n.inputs[1]).meta.shape[1], 8);
    if (n.inputs.size() == 3) {
      EXPECT_EQ(g.value(n.inputs[2]).meta.shape, (Shape{5}));
    }
  }
}

TEST(InferencePasses, MatmulByAnArgumentStaysAProduct) {
  Graph g;
  const ValueId x = g.add_argument({{4, 8}, kFloat32});
  const ValueId w = g.add_argument({{8, 3}, kFloat32});
  g.outputs = {g.add_node(op_mm(), NoAttrs{}, {x, w})[0]};
  EXPECT_EQ(fuse_matmul_linear(g), 0);
}

// x -> the exact GELU written out in one of the ways exporters do.
using GeluSpelling = ValueId (*)(Graph&, ValueId);

ValueId c(Graph& g, double v) { return g.add_constant(full({}, v)); }
ValueId mul(Graph& g, ValueId a, ValueId b) { return g.add_node(op_mul(), NoAttrs{}, {a, b})[0]; }
ValueId erf_plus_one(Graph& g, ValueId x, bool by_mul) {
  const ValueId s = by_mul ? mul(g, x, c(g, 0.70710678118654752))
                           : g.add_node(op_div(), NoAttrs{}, {x, c(g, 1.4142135623730951)})[0];
  const ValueId e = g.add_node(op_erf(), NoAttrs{}, {s})[0];
  return g.add_node(op_add(), AlphaAttrs{}, {c(g, 1.0), e})[0];
}

TEST(InferencePasses, GeluInEveryExportedSpellingBecomesOneNode) {
  const std::vector<GeluSpelling> spellings{
      // torch.onnx (TorchScript): mul(mul(x, A), 0.5)
      [](Graph& g, ValueId x) { return mul(g, mul(g, x, erf_plus_one(g, x, false)), c(g, 0.5)); },
      // 0.5 * x first, then A
      [](Graph& g, ValueId x) { return mul(g, mul(g, c(g, 0.5), x), erf_plus_one(g, x, true)); },
      // A * 0.5, then x
      [](Graph& g, ValueId x) { return mul(g, x, mul(g, erf_plus_one(g, x, false), c(g, 0.5))); },
      // (x * A) / 2
      [](Graph& g, ValueId x) {
        return g.add_node(op_div(), NoAttrs{}, {mul(g, x, erf_plus_one(g, x, true)), c(g, 2.0)})[0];
      },
  };
  const Tensor in = randn({3, 40}) * 3;
  for (std::size_t i = 0; i < spellings.size(); ++i) {
    Graph g;
    const ValueId x = g.add_argument({{3, 40}, kFloat32});
    g.outputs = {spellings[i](g, x)};
    const std::vector<Tensor> before = run_planned(g, {in});
    EXPECT_EQ(apply(g, fuse_gelu), 1) << "spelling " << i << "\n" << g.to_text();
    EXPECT_EQ(g.count("gelu"), 1);
    EXPECT_EQ(g.nodes.size(), 1u) << g.to_text();
    EXPECT_TRUE(allclose(run_planned(g, {in})[0], before[0], {.rtol = 1e-6, .atol = 1e-6}));
    EXPECT_TRUE(allclose(before[0], gelu(in), {.rtol = 1e-6, .atol = 1e-6}));
  }
}

TEST(InferencePasses, GeluLeavesNearMissesAlone) {
  Graph g;
  const ValueId x = g.add_argument({{8}, kFloat32});
  const ValueId a = erf_plus_one(g, x, false);
  g.outputs = {mul(g, mul(g, x, a), c(g, 0.25))};  // not 0.5
  Graph h;
  const ValueId y = h.add_argument({{8}, kFloat32});
  const ValueId b = erf_plus_one(h, y, false);
  const ValueId t = mul(h, y, b);
  h.outputs = {mul(h, t, c(h, 0.5)), t};  // an intermediate is an output
  EXPECT_EQ(fuse_gelu(g), 0);
  EXPECT_EQ(fuse_gelu(h), 0);
}

Tensor causal_mask(int64_t n) {
  return triu(full({n, n}, -std::numeric_limits<double>::infinity()), 1);
}

// softmax(matmul(q * c, k^T * c) + mask) @ v, as the TorchScript exporter writes attention.
Graph exported_attention(const Tensor& mask, ValueId* scores_out = nullptr) {
  Graph g;
  const ValueId q = g.add_argument({{2, 3, 5, 4}, kFloat32});
  const ValueId k = g.add_argument({{2, 3, 5, 4}, kFloat32});
  const ValueId v = g.add_argument({{2, 3, 5, 4}, kFloat32});
  const ValueId kt = g.add_node(op_permute(), PermuteAttrs{.dims = {0, 1, 3, 2}}, {k})[0];
  const ValueId root = g.add_constant(full({1}, std::pow(4.0, -0.25)));
  const ValueId s = g.add_node(op_matmul(), NoAttrs{}, {mul(g, q, root), mul(g, kt, root)})[0];
  const ValueId z = g.add_node(op_add(), AlphaAttrs{}, {s, g.add_constant(mask)})[0];
  const ValueId p = g.add_node(op_softmax(), SoftmaxAttrs{.dim = 3}, {z})[0];
  g.outputs = {g.add_node(op_matmul(), NoAttrs{}, {p, v})[0]};
  if (scores_out != nullptr) *scores_out = s;
  return g;
}

TEST(InferencePasses, ScaledCausalSoftmaxBecomesAttentionSoftmax) {
  manual_seed(2);
  Graph g = exported_attention(causal_mask(5));
  const std::vector<Tensor> args{randn({2, 3, 5, 4}), randn({2, 3, 5, 4}), randn({2, 3, 5, 4})};
  const std::vector<Tensor> before = run_planned(g, args);
  EXPECT_EQ(apply(g, fuse_attention_softmax), 1);
  EXPECT_EQ(g.count("attention_softmax"), 1);
  EXPECT_EQ(g.count("mul") + g.count("add") + g.count("softmax"), 0) << g.to_text();
  for (const Node& n : g.nodes) {
    if (n.op != &op_attention_softmax()) continue;
    const auto& a = *static_cast<const AttentionSoftmaxAttrs*>(n.attrs.get());
    EXPECT_TRUE(a.causal);
    EXPECT_NEAR(a.scale, 0.5, 1e-7);
  }
  const std::vector<Tensor> after = run_planned(g, args);
  EXPECT_TRUE(allclose(after[0], before[0], {.rtol = 1e-5, .atol = 1e-6}));
  const Tensor want = scaled_dot_product_attention(args[0], args[1], args[2], {.is_causal = true});
  EXPECT_TRUE(allclose(after[0], want, {.rtol = 1e-5, .atol = 1e-6}));
}

TEST(InferencePasses, AttentionSoftmaxLeavesAMaskThatIsNotCausal) {
  std::vector<float> m = causal_mask(5).to_vector<float>();
  m[1 * 5 + 3] = 0;  // one more key visible
  Graph g = exported_attention(from_vector<float>(m, {5, 5}));
  EXPECT_EQ(fuse_attention_softmax(g), 0);
  Graph h = exported_attention(causal_mask(5).view({1, 1, 5, 5}));  // broadcast: still causal
  EXPECT_EQ(fuse_attention_softmax(h), 1);
}

TEST(InferencePasses, AScaleOnTheScoresMovesIntoTheSoftmax) {
  Graph g;
  const ValueId q = g.add_argument({{2, 6, 4}, kFloat32});
  const ValueId k = g.add_argument({{2, 4, 6}, kFloat32});
  const ValueId s = g.add_node(op_bmm(), NoAttrs{}, {q, k})[0];
  const ValueId d = g.add_node(op_div(), NoAttrs{}, {s, c(g, 2.0)})[0];
  g.outputs = {g.add_node(op_softmax(), SoftmaxAttrs{.dim = 2}, {d})[0]};
  const std::vector<Tensor> args{randn({2, 6, 4}), randn({2, 4, 6})};
  const std::vector<Tensor> before = run_planned(g, args);
  EXPECT_EQ(apply(g, fuse_attention_softmax), 1);
  EXPECT_EQ(g.count("div"), 0);
  const auto& a = *static_cast<const AttentionSoftmaxAttrs*>(g.nodes.back().attrs.get());
  EXPECT_EQ(a.scale, 0.5);
  EXPECT_FALSE(a.causal);
  EXPECT_TRUE(allclose(run_planned(g, args)[0], before[0], {.rtol = 1e-6, .atol = 1e-7}));
}

// One pre-LN attention block as the TorchScript exporter lowers nn.MultiheadAttention with
// batch_first: the packed projection y [L, B, 3E] cut into q, k, v by views and index_select,
// and the output's permute -> clone -> view before the out-projection.
struct ExportedHeads {
  static constexpr int64_t L = 5, B = 2, H = 2, D = 4, E = H * D;
  Graph g;
  Tensor w_out = randn({E, E}), w_in = randn({3 * E, E});

  // projected: y = linear(clone(permute(z))) over z [B, L, E], and the out-projection's result
  // transposed back and added to z (the exporter's whole block); else y = relu(x [L, B, 3E]) and
  // the out-projection's result is the output.
  explicit ExportedHeads(bool projected = false) {
    ValueId y, z = kNoValue;
    if (projected) {
      z = g.add_node(op_relu(), NoAttrs{}, {g.add_argument({{B, L, E}, kFloat32})})[0];
      ValueId t = g.add_node(op_permute(), PermuteAttrs{.dims = {1, 0, 2}}, {z})[0];
      t = g.add_node(op_clone(), NoAttrs{}, {t})[0];
      t = g.add_node(op_view(), ShapeAttrs{.shape = {L * B, E}}, {t})[0];
      y = g.add_node(op_linear(), NoAttrs{}, {t, g.add_constant(w_in)})[0];
    } else {
      const ValueId x = g.add_argument({{L, B, 3 * E}, kFloat32});
      y = g.add_node(op_relu(), NoAttrs{}, {x})[0];  // a projection's fresh result
    }
    ValueId t = g.add_node(op_view(), ShapeAttrs{.shape = {L, B, 3, E}}, {y})[0];
    t = g.add_node(op_view(), ShapeAttrs{.shape = {1, L, B, 3, E}}, {t})[0];
    t = g.add_node(op_permute(), PermuteAttrs{.dims = {3, 1, 2, 0, 4}}, {t})[0];
    t = g.add_node(op_view(), ShapeAttrs{.shape = {3, L, B, E}}, {t})[0];
    ValueId part[3];
    for (int64_t i = 0; i < 3; ++i) {
      const ValueId idx = g.add_constant(full({1}, static_cast<double>(i), kInt64));
      ValueId p = g.add_node(op_index_select(), DimAttrs{.dim = 0}, {t, idx})[0];
      p = g.add_node(op_view(), ShapeAttrs{.shape = {L, B * H, D}}, {p})[0];
      p = g.add_node(op_permute(), PermuteAttrs{.dims = {1, 0, 2}}, {p})[0];
      part[i] = g.add_node(op_view(), ShapeAttrs{.shape = {B, H, L, D}}, {p})[0];
    }
    const ValueId kt = g.add_node(op_permute(), PermuteAttrs{.dims = {0, 1, 3, 2}}, {part[1]})[0];
    const ValueId s = g.add_node(op_matmul(), NoAttrs{}, {part[0], kt})[0];
    const ValueId p = g.add_node(op_softmax(), SoftmaxAttrs{.dim = 3}, {s})[0];
    const ValueId o = g.add_node(op_matmul(), NoAttrs{}, {p, part[2]})[0];
    ValueId m = g.add_node(op_permute(), PermuteAttrs{.dims = {2, 0, 1, 3}}, {o})[0];
    m = g.add_node(op_clone(), NoAttrs{}, {m})[0];
    m = g.add_node(op_view(), ShapeAttrs{.shape = {L * B, E}}, {m})[0];
    const ValueId out = g.add_node(op_linear(), NoAttrs{}, {m, g.add_constant(w_out)})[0];
    if (!projected) {
      g.outputs = {out};
      return;
    }
    ValueId r = g.add_node(op_view(), ShapeAttrs{.shape = {L, B, E}}, {out})[0];
    r = g.add_node(op_permute(), PermuteAttrs{.dims = {1, 0, 2}}, {r})[0];
    g.outputs = {g.add_node(op_add(), AlphaAttrs{}, {z, r})[0]};
  }
};

TEST(InferencePasses, HeadSplitAndMergeBecomeOneCopyEach) {
  manual_seed(3);
  ExportedHeads h;
  Graph& g = h.g;
  const std::vector<Tensor> args{randn({5, 2, 24})};
  const std::vector<Tensor> before = run_planned(g, args);
  EXPECT_EQ(apply(g, convert_attention_heads), 4);  // q, k^T, v, the out-projection's input
  EXPECT_EQ(g.count("split_heads"), 1) << g.to_text();
  EXPECT_EQ(g.count("merge_heads"), 1);
  EXPECT_EQ(g.count("index_select") + g.count("clone"), 0) << g.to_text();
  for (const Node& n : g.nodes) {
    if (n.op == &op_split_heads() || n.op == &op_merge_heads()) {
      const auto& a = *static_cast<const HeadsAttrs*>(n.attrs.get());
      EXPECT_EQ(a.heads, 2);
      EXPECT_FALSE(a.batch_first);  // the exporter's [L, B, ...] order
    }
  }
  EXPECT_TRUE(bits_equal(run_planned(g, args), before));
}

// The exporter's block on [L, B, E] rows over a batch-first x: after the split and merge, the
// in-projection reads x itself (no transposing copy) and the out-projection writes the
// batch-first rows the residual add reads.
TEST(InferencePasses, HeadsMakeASequenceFirstBlockBatchFirst) {
  manual_seed(5);
  ExportedHeads h(/*projected=*/true);
  Graph& g = h.g;
  const std::vector<Tensor> args{randn({2, 5, 8})};
  const std::vector<Tensor> before = run_planned(g, args);
  EXPECT_EQ(apply(g, convert_attention_heads), 4);
  EXPECT_EQ(g.count("clone") + g.count("index_select"), 0) << g.to_text();
  EXPECT_EQ(g.count("permute"), 1) << g.to_text();  // k^T's, a view the product reads
  EXPECT_EQ(g.count("linear"), 2);
  for (const Node& n : g.nodes) {
    if (n.op == &op_split_heads() || n.op == &op_merge_heads()) {
      EXPECT_TRUE(static_cast<const HeadsAttrs*>(n.attrs.get())->batch_first) << g.to_text();
    }
    if (n.op == &op_add()) {  // the residual add reads the product dense
      EXPECT_EQ(g.value(n.inputs[1]).strides, contiguous_strides(g.value(n.inputs[1]).meta.shape));
    }
  }
  EXPECT_TRUE(bits_equal(run_planned(g, args), before));
}

// split -> q k^T -> attention_softmax -> . v -> merge over one projection: one self_attention.
TEST(InferencePasses, AttentionCoreOverAPackedProjectionBecomesSelfAttention) {
  manual_seed(6);
  for (const bool bf : {true, false}) {
    Graph g;
    const ValueId x = g.add_argument({{3, 6, 24}, kFloat32});
    const HeadsAttrs split{.heads = 2, .parts = 3, .batch_first = bf};
    const std::vector<ValueId> qkv = g.add_node(op_split_heads(), split, {x});
    const ValueId kt = g.add_node(op_permute(), PermuteAttrs{.dims = {0, 1, 3, 2}}, {qkv[1]})[0];
    const ValueId s = g.add_node(op_matmul(), NoAttrs{}, {qkv[0], kt})[0];
    const ValueId p = g.add_node(op_attention_softmax(),
                                 AttentionSoftmaxAttrs{.scale = 0.35, .causal = true}, {s})[0];
    const ValueId o = g.add_node(op_matmul(), NoAttrs{}, {p, qkv[2]})[0];
    const HeadsAttrs merge{.heads = 2, .parts = 1, .batch_first = bf};
    g.outputs = {g.add_node(op_merge_heads(), merge, {o})[0]};
    const std::vector<Tensor> args{randn({3, 6, 24})};
    const std::vector<Tensor> before = run_planned(g, args);
    EXPECT_EQ(apply(g, fuse_self_attention), 1);
    EXPECT_EQ(g.nodes.size(), 1u) << g.to_text();
    const auto& a = *static_cast<const SelfAttentionAttrs*>(g.nodes[0].attrs.get());
    EXPECT_EQ(a.heads, 2);
    EXPECT_EQ(a.scale, 0.35);
    EXPECT_TRUE(a.causal);
    EXPECT_EQ(a.batch_first, bf);
    EXPECT_TRUE(allclose(run_planned(g, args)[0], before[0], {.rtol = 1e-5, .atol = 1e-6}));
  }
  // A probability matrix read by something else too (an output) keeps the unfused ops.
  Graph g;
  const ValueId x = g.add_argument({{3, 6, 24}, kFloat32});
  const std::vector<ValueId> qkv =
      g.add_node(op_split_heads(), HeadsAttrs{.heads = 2, .parts = 3}, {x});
  const ValueId kt = g.add_node(op_permute(), PermuteAttrs{.dims = {0, 1, 3, 2}}, {qkv[1]})[0];
  const ValueId s = g.add_node(op_matmul(), NoAttrs{}, {qkv[0], kt})[0];
  const ValueId p = g.add_node(op_softmax(), SoftmaxAttrs{.dim = 3}, {s})[0];
  const ValueId o = g.add_node(op_matmul(), NoAttrs{}, {p, qkv[2]})[0];
  g.outputs = {g.add_node(op_merge_heads(), HeadsAttrs{.heads = 2}, {o})[0], p};
  EXPECT_EQ(fuse_self_attention(g), 0);
}

TEST(InferencePasses, HeadsLeavesChainsThatReadOtherElements) {
  // The same block with parts taken in another order from a [L, B, E, 3] layout: q is not
  // what split_heads calls part 0, so nothing is rewritten.
  Graph g;
  const ValueId x = g.add_argument({{5, 2, 24}, kFloat32});
  const ValueId y = g.add_node(op_relu(), NoAttrs{}, {x})[0];
  ValueId t = g.add_node(op_view(), ShapeAttrs{.shape = {5, 2, 8, 3}}, {y})[0];
  t = g.add_node(op_permute(), PermuteAttrs{.dims = {3, 0, 1, 2}}, {t})[0];
  const ValueId idx = g.add_constant(full({1}, 0.0, kInt64));
  ValueId q = g.add_node(op_index_select(), DimAttrs{.dim = 0}, {t, idx})[0];
  q = g.add_node(op_view(), ShapeAttrs{.shape = {5, 4, 4}}, {q})[0];
  q = g.add_node(op_permute(), PermuteAttrs{.dims = {1, 0, 2}}, {q})[0];
  q = g.add_node(op_view(), ShapeAttrs{.shape = {2, 2, 5, 4}}, {q})[0];
  const ValueId kt = g.add_node(op_permute(), PermuteAttrs{.dims = {0, 1, 3, 2}}, {q})[0];
  g.outputs = {g.add_node(op_matmul(), NoAttrs{}, {q, kt})[0]};
  EXPECT_EQ(convert_attention_heads(g), 0) << g.to_text();
}

TEST(InferencePasses, SelectOfOneConstantIndexBecomesAView) {
  Graph g;
  const ValueId x = g.add_argument({{3, 4, 6}, kFloat32});
  const ValueId one = g.add_constant(full({1}, 1.0, kInt64));
  // Part 1 along dim 2, read by a kernel through a view that works on the strided slice.
  const ValueId p = g.add_node(op_index_select(), DimAttrs{.dim = 2}, {x, one})[0];
  const ValueId v = g.add_node(op_view(), ShapeAttrs{.shape = {3, 2, 2}}, {p})[0];
  const ValueId a = g.add_node(op_exp(), NoAttrs{}, {v})[0];
  // Part 1 along dim 1 flattened to [18]: a view of the slice cannot do that; it stays a copy.
  const ValueId q = g.add_node(op_index_select(), DimAttrs{.dim = 1}, {x, one})[0];
  const ValueId flat = g.add_node(op_view(), ShapeAttrs{.shape = {18}}, {q})[0];
  const ValueId b = g.add_node(op_neg(), NoAttrs{}, {flat})[0];
  g.outputs = {a, b};
  const std::vector<Tensor> args{randn({3, 4, 6})};
  const std::vector<Tensor> before = run_planned(g, args);
  EXPECT_EQ(apply(g, convert_selects_to_views), 1);
  EXPECT_EQ(g.count("slice"), 1);
  EXPECT_EQ(g.count("index_select"), 1);
  EXPECT_TRUE(bits_equal(run_planned(g, args), before));
  for (const Node& n : g.nodes) {
    if (n.op == &op_view() && g.value(n.outputs[0]).meta.shape.size() == 3) {
      EXPECT_EQ(g.value(n.outputs[0]).strides, (Strides{24, 12, 6})) << g.to_text();
      EXPECT_EQ(g.storage_of(n.outputs[0]), g.arguments[0]);
    }
  }
}

// rewrite() replacing a value by a view: views of the replaced value now view the replacement's
// buffer, whose owner is not the replacement itself (the linear pass replaces a bias add's
// result by a view of the product, and the memory plan must see the product's buffer live
// through every later read).
TEST(InferencePasses, RewriteToAViewKeepsTheBufferOwner) {
  Graph g;
  const ValueId x = g.add_argument({{6}, kFloat32});
  const ValueId e = g.add_node(op_exp(), NoAttrs{}, {x})[0];
  const ValueId ev = g.add_node(op_view(), ShapeAttrs{.shape = {2, 3}}, {e})[0];
  const ValueId n = g.add_node(op_relu(), NoAttrs{}, {ev})[0];  // relu(exp) == exp
  const ValueId nv = g.add_node(op_view(), ShapeAttrs{.shape = {3, 2}}, {n})[0];
  const ValueId late = g.add_node(op_neg(), NoAttrs{}, {x})[0];  // a buffer that could reuse e's
  g.outputs = {g.add_node(op_add(), AlphaAttrs{},
                          {nv, g.add_node(op_view(), ShapeAttrs{.shape = {3, 2}}, {late})[0]})[0]};
  std::vector<bool> keep(g.nodes.size(), true);
  keep[2] = false;
  std::vector<ValueId> replace(g.values.size(), kNoValue);
  replace[static_cast<std::size_t>(n)] = ev;
  rewrite(g, keep, replace);
  verify(g);
  EXPECT_EQ(g.storage_of(g.nodes[2].outputs[0]), g.nodes[0].outputs[0]) << g.to_text();
  const Tensor in = randn({6});
  EXPECT_TRUE(allclose(run_planned(g, {in})[0], (exp(in) - in).view({3, 2})));
}

}  // namespace
}  // namespace ath::graph
