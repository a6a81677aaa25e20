// The inference passes on a pre-LN Transformer encoder layer written the way the TorchScript
// exporter writes nn.TransformerEncoderLayer(batch_first, norm_first, activation="gelu") with a
// causal mask: MatMul + Add projections, the packed q/k/v cut by Reshape, Unsqueeze, Transpose,
// Squeeze and Gather, q and k^T each scaled by sqrt(scale), an additive -inf mask, the output's
// Transpose -> Reshape before a Gemm, all on [L, B, E] rows, and GELU as Div, Erf, Add, Mul, Mul.
// Optimized, the layer is linear nodes, gelu and one self_attention (batch-first: no transposing
// copy), and its result equals the unoptimized session's and the registry ops composed by hand.
#include <athanor/athanor.h>
#include <athanor/graph/graph.h>
#include <athanor/onnx/session.h>
#include <athanor/ops/linear_packed.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>

#include "onnx/model_builder.h"

namespace ath::onnx {
namespace {

using testing::ModelBuilder;
constexpr int kF = ::onnx::TensorProto::FLOAT;

struct ExportedEncoderLayer {
  static constexpr int64_t B = 2, L = 6, E = 8, H = 2, D = E / H, F = 16;
  Tensor g1 = randn({E}), b1 = randn({E}), g2 = randn({E}), b2 = randn({E});
  Tensor w_in = randn({E, 3 * E}) * 0.3, b_in = randn({3 * E}) * 0.1;
  Tensor w_out = randn({E, E}) * 0.3, b_out = randn({E}) * 0.1;
  Tensor w1 = randn({E, F}) * 0.3, bias1 = randn({F}) * 0.1;
  Tensor w2 = randn({F, E}) * 0.3, bias2 = randn({E}) * 0.1;
  Tensor mask = triu(full({L, L}, -std::numeric_limits<double>::infinity()), 1);

  static void shape(ModelBuilder& m, const std::string& name, std::vector<int64_t> dims) {
    const auto n = static_cast<int64_t>(dims.size());
    m.initializer(name, from_vector<int64_t>(dims, {n}));
  }

  std::string save() const {
    ModelBuilder m(17);
    m.input("x", kF, {B, L, E});
    for (auto [name, t] : {std::pair{"g1", g1},
                           {"b1", b1},
                           {"g2", g2},
                           {"b2", b2},
                           {"w_in", w_in},
                           {"b_in", b_in},
                           {"w_out", w_out},
                           {"b_out", b_out},
                           {"w1", w1},
                           {"bias1", bias1},
                           {"w2", w2},
                           {"bias2", bias2},
                           {"mask", mask}})
      m.initializer(name, t);
    m.initializer("root_scale", full({1}, std::pow(double(D), -0.25)));
    m.initializer("sqrt2", full({}, std::sqrt(2.0)));
    m.initializer("one", full({}, 1.0));
    m.initializer("half", full({}, 0.5));
    m.initializer("axis0", from_vector<int64_t>({0}, {1}));
    m.initializer("axis_m2", from_vector<int64_t>({-2}, {1}));
    shape(m, "s_packed", {L, B, 3, E});
    shape(m, "s_heads", {L, B * H, D});
    shape(m, "s_bhld", {B, H, L, D});
    shape(m, "s_rows", {L * B, E});
    shape(m, "s_lbe", {L, B, E});
    auto perm = [&](const std::string& x, const std::string& y, std::vector<int64_t> p) {
      ModelBuilder::attr(m.node("Transpose", {x}, {y}), "perm", p);
    };
    auto norm = [&](const std::string& x, const std::string& g, const std::string& b,
                    const std::string& y) {
      ModelBuilder::attr(m.node("LayerNormalization", {x, g, b}, {y}), "axis", int64_t{-1});
    };
    norm("x", "g1", "b1", "ln1");
    perm("ln1", "t", {1, 0, 2});
    m.node("MatMul", {"t", "w_in"}, {"mm"});
    m.node("Add", {"b_in", "mm"}, {"qkv"});
    m.node("Reshape", {"qkv", "s_packed"}, {"packed"});
    m.node("Unsqueeze", {"packed", "axis0"}, {"u"});
    perm("u", "ut", {3, 1, 2, 0, 4});
    m.node("Squeeze", {"ut", "axis_m2"}, {"parts"});
    for (int i = 0; i < 3; ++i) {
      const std::string p = std::string(1, "qkv"[i]);
      m.initializer("i" + p, full({}, double(i), kInt64));
      ModelBuilder::attr(m.node("Gather", {"parts", "i" + p}, {p + "0"}), "axis", int64_t{0});
      m.node("Reshape", {p + "0", "s_heads"}, {p + "1"});
      perm(p + "1", p + "2", {1, 0, 2});
      m.node("Reshape", {p + "2", "s_bhld"}, {p + "h"});
    }
    perm("kh", "kT", {0, 1, 3, 2});
    m.node("Mul", {"qh", "root_scale"}, {"qs"});
    m.node("Mul", {"kT", "root_scale"}, {"ks"});
    m.node("MatMul", {"qs", "ks"}, {"scores"});
    m.node("Add", {"scores", "mask"}, {"masked"});
    ModelBuilder::attr(m.node("Softmax", {"masked"}, {"probs"}), "axis", int64_t{-1});
    m.node("MatMul", {"probs", "vh"}, {"o"});
    perm("o", "ot", {2, 0, 1, 3});
    m.node("Reshape", {"ot", "s_rows"}, {"rows"});
    ModelBuilder::attr(m.node("Gemm", {"rows", "w_out_t", "b_out"}, {"proj"}), "transB",
                       int64_t{1});
    m.initializer("w_out_t", w_out.t().contiguous());
    m.node("Reshape", {"proj", "s_lbe"}, {"proj3"});
    perm("proj3", "projt", {1, 0, 2});
    m.node("Add", {"x", "projt"}, {"res"});
    norm("res", "g2", "b2", "ln2");
    m.node("MatMul", {"ln2", "w1"}, {"h"});
    m.node("Add", {"bias1", "h"}, {"hb"});
    m.node("Div", {"hb", "sqrt2"}, {"gd"});
    m.node("Erf", {"gd"}, {"ge"});
    m.node("Add", {"ge", "one"}, {"ga"});
    m.node("Mul", {"hb", "ga"}, {"gm"});
    m.node("Mul", {"gm", "half"}, {"gelu"});
    m.node("MatMul", {"gelu", "w2"}, {"f"});
    m.node("Add", {"bias2", "f"}, {"fb"});
    m.node("Add", {"res", "fb"}, {"y"});
    m.output("y", kF);
    return m.save("exported_encoder_layer");
  }

  // The layer from registry ops, batch-first throughout.
  Tensor reference(const Tensor& x) const {
    const Tensor ln1 = layer_norm(x, {E}, g1, b1);
    std::vector<Tensor> qkv = split_heads(linear(ln1, w_in.t(), b_in), H, 3);
    const Tensor o = scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], {.is_causal = true});
    const Tensor res = x + linear(merge_heads({o}), w_out.t(), b_out);
    const Tensor ff =
        linear(gelu(linear(layer_norm(res, {E}, g2, b2), w1.t(), bias1)), w2.t(), bias2);
    return res + ff;
  }
};

int linears(const graph::Graph& g) { return g.count("linear") + g.count("linear_packed"); }

TEST(InferencePasses, ExportedEncoderLayerRunsOnFusedOps) {
  manual_seed(21);
  const ExportedEncoderLayer layer;
  const std::string path = layer.save();
  InferenceSession s(path, {.threads = 2});
  InferenceSession plain(path, {.optimize = false});
  const Tensor x = randn({2, 6, 8});
  const Tensor unoptimized = plain.run({{"x", x}})[0];
  EXPECT_TRUE(allclose(unoptimized, layer.reference(x), {.rtol = 1e-5, .atol = 1e-5}));
  for (int run = 0; run < 2; ++run) {  // the traced run, then the replay
    const Tensor y = s.run({{"x", x}})[0];
    EXPECT_TRUE(allclose(y, unoptimized, {.rtol = 1e-5, .atol = 1e-6}));
  }
  const graph::Graph& g = *s.last_graph();
  // In-projection, out-projection, two FF (pack_linear then packs each weight).
  EXPECT_EQ(linears(g), 4) << g.to_text();
  // The feed-forward's GELU runs as the first FF linear's post-op (pack_linear).
  EXPECT_EQ(g.count("gelu"), 0) << g.to_text();
  int gelu_epilogues = 0;
  for (const graph::Node& n : g.nodes)
    if (n.op->name == "linear_packed")
      gelu_epilogues += static_cast<const LinearPackedAttrs*>(n.attrs.get())->gelu;
  EXPECT_EQ(gelu_epilogues, 1) << g.to_text();
  // Both residual adds (after the out-projection and after the second FF linear) are those
  // linears' post-ops: no add is left.
  int residual_epilogues = 0;
  for (const graph::Node& n : g.nodes)
    if (n.op->name == "linear_packed")
      residual_epilogues += static_cast<const LinearPackedAttrs*>(n.attrs.get())->residual;
  EXPECT_EQ(residual_epilogues, 2) << g.to_text();
  EXPECT_EQ(g.count("add"), 0) << g.to_text();
  EXPECT_EQ(g.count("self_attention"), 1) << g.to_text();
  for (const char* gone : {"mm", "matmul", "erf", "softmax", "attention_softmax", "index_select",
                           "mul", "div", "clone", "permute", "split_heads", "merge_heads"})
    EXPECT_EQ(g.count(gone), 0) << gone << "\n" << g.to_text();
  for (const graph::Node& n : g.nodes) {
    if (n.op->name == "self_attention") {
      const auto& a = *static_cast<const SelfAttentionAttrs*>(n.attrs.get());
      EXPECT_EQ(a.heads, 2);
      EXPECT_TRUE(a.causal);
      EXPECT_TRUE(a.batch_first);  // the heads pass made the exporter's [L, B, E] block batch-first
      EXPECT_NEAR(a.scale, 0.5, 1e-7);  // 1 / sqrt(4)
    }
  }
}

// Without self_attention, the pieces it replaces: one split_heads, attention_softmax (causal),
// merge_heads, batch-first, with no transposing copy.
TEST(InferencePasses, ExportedEncoderLayerPiecesWithoutSelfAttention) {
  manual_seed(23);
  const ExportedEncoderLayer layer;
  const std::string path = layer.save();
  InferenceSession s(path, {.threads = 2, .disable_passes = {"self_attention"}});
  InferenceSession plain(path, {.optimize = false});
  const Tensor x = randn({2, 6, 8});
  EXPECT_TRUE(
      allclose(s.run({{"x", x}})[0], plain.run({{"x", x}})[0], {.rtol = 1e-5, .atol = 1e-6}));
  const graph::Graph& g = *s.last_graph();
  EXPECT_EQ(g.count("split_heads"), 1) << g.to_text();
  EXPECT_EQ(g.count("merge_heads"), 1) << g.to_text();
  EXPECT_EQ(g.count("attention_softmax"), 1) << g.to_text();
  EXPECT_EQ(g.count("matmul"), 2) << g.to_text();  // q k^T and p v
  // Batch-first throughout: the only permute left is k^T's (a view the product reads).
  EXPECT_EQ(g.count("permute"), 1) << g.to_text();
  for (const char* gone : {"clone", "index_select", "softmax", "mul"})
    EXPECT_EQ(g.count(gone), 0) << gone << "\n" << g.to_text();
  for (const graph::Node& n : g.nodes) {
    if (n.op->name == "split_heads" || n.op->name == "merge_heads") {
      EXPECT_TRUE(static_cast<const HeadsAttrs*>(n.attrs.get())->batch_first);
    }
    if (n.op->name == "attention_softmax") {
      const auto& a = *static_cast<const AttentionSoftmaxAttrs*>(n.attrs.get());
      EXPECT_TRUE(a.causal);
      EXPECT_NEAR(a.scale, 0.5, 1e-7);
    }
  }
}

// The optimized layer through a saved plan (saved_plan_test.cpp has the plan's own tests): the
// loading session replays self_attention, gelu and the packed linears to the same bits.
TEST(InferencePasses, ExportedEncoderLayerReplaysFromASavedPlan) {
  manual_seed(24);
  const ExportedEncoderLayer layer;
  const std::string path = layer.save();
  const std::string plan = path + ".plan";
  std::remove(plan.c_str());
  const Tensor x = randn({2, 6, 8});
  InferenceSession a(path, {.threads = 2, .plan_path = plan});
  a.run({{"x", x}});
  const Tensor want = a.run({{"x", x}})[0];
  InferenceSession b(path, {.threads = 2, .plan_path = plan});
  EXPECT_EQ(b.stats().plan_graphs_loaded, 1);
  EXPECT_TRUE(equal(b.run({{"x", x}})[0], want));
  EXPECT_EQ(b.stats().traces, 0);
  EXPECT_EQ(b.last_graph()->count("self_attention"), 1);
  EXPECT_EQ(b.last_graph()->to_text(), a.last_graph()->to_text());
}

TEST(InferencePasses, OffByNameKeepsTheExportedOps) {
  manual_seed(22);
  const ExportedEncoderLayer layer;
  InferenceSession s(layer.save(), {.disable_passes = {"linear", "gelu", "attention", "heads",
                                                       "self_attention", "select_view"}});
  const Tensor x = randn({2, 6, 8});
  EXPECT_TRUE(allclose(s.run({{"x", x}})[0], layer.reference(x), {.rtol = 1e-5, .atol = 1e-5}));
  const graph::Graph& g = *s.last_graph();
  EXPECT_EQ(linears(g), 1) << g.to_text();  // the Gemm's own
  EXPECT_EQ(g.count("erf"), 1);
  EXPECT_EQ(g.count("softmax"), 1);
  EXPECT_EQ(g.count("index_select"), 3);
  EXPECT_EQ(g.count("split_heads") + g.count("gelu") + g.count("attention_softmax"), 0);
}

}  // namespace
}  // namespace ath::onnx
