// The inference-only blocked_layout pass on a small residual network (a ResNet stage in
// miniature): every convolution, the residual add and relu, the max pool and the global average
// pool run on the blocked layout, with one conversion out before the classifier; the result
// equals the same model run without any pass and the registry ops composed by hand.
#include <athanor/athanor.h>
#include <athanor/graph/graph.h>
#include <athanor/onnx/session.h>
#include <athanor/ops/conv_blocked.h>
#include <gtest/gtest.h>

#include "onnx/model_builder.h"

namespace ath::onnx {
namespace {

using testing::ModelBuilder;
constexpr int kF = ::onnx::TensorProto::FLOAT;

void conv(ModelBuilder& m, const std::string& x, const std::string& w, const std::string& b,
          const std::string& y, int64_t stride, int64_t pad) {
  auto* n = m.node("Conv", {x, w, b}, {y});
  ModelBuilder::attr(n, "pads", std::vector<int64_t>{pad, pad, pad, pad});
  ModelBuilder::attr(n, "strides", std::vector<int64_t>{stride, stride});
}

// `c` channels: 20 runs the direct kernels everywhere; 32 lets the stage's 3x3 convolutions run
// oneDNN's Winograd kernels on AVX-512 (and the graph take nChw16c).
struct TinyResNet {
  explicit TinyResNet(int64_t c = 20) : c(c) {}
  int64_t c;
  Tensor w0 = randn({c, 3, 3, 3}) * 0.3, b0 = randn({c}) * 0.1;
  Tensor w1 = randn({c, c, 3, 3}) * 0.1, b1 = randn({c}) * 0.1;
  Tensor w2 = randn({c, c, 3, 3}) * 0.1, b2 = randn({c}) * 0.1;
  Tensor wf = randn({5, c}), bf = randn({5});

  std::string save() const {
    ModelBuilder m(13);
    m.input("x", kF, {"N", 3, 15, 15});
    for (auto [name, t] : {std::pair{"w0", w0},
                           {"b0", b0},
                           {"w1", w1},
                           {"b1", b1},
                           {"w2", w2},
                           {"b2", b2},
                           {"wf", wf},
                           {"bf", bf}})
      m.initializer(name, t);
    conv(m, "x", "w0", "b0", "c0", 1, 1);
    m.node("Relu", {"c0"}, {"r0"});
    auto* pool = m.node("MaxPool", {"r0"}, {"p0"});
    ModelBuilder::attr(pool, "kernel_shape", std::vector<int64_t>{3, 3});
    ModelBuilder::attr(pool, "strides", std::vector<int64_t>{2, 2});
    ModelBuilder::attr(pool, "pads", std::vector<int64_t>{1, 1, 1, 1});
    conv(m, "p0", "w1", "b1", "c1", 1, 1);
    m.node("Relu", {"c1"}, {"r1"});
    conv(m, "r1", "w2", "b2", "c2", 1, 1);
    m.node("Add", {"c2", "p0"}, {"s2"});
    m.node("Relu", {"s2"}, {"r2"});
    m.node("GlobalAveragePool", {"r2"}, {"g"});
    m.node("Flatten", {"g"}, {"f"});
    auto* gemm = m.node("Gemm", {"f", "wf", "bf"}, {"y"});
    ModelBuilder::attr(gemm, "transB", int64_t{1});
    m.output("y", kF);
    return m.save("tiny_resnet");
  }

  Tensor reference(const Tensor& x) const {
    const Tensor p0 = max_pool2d(relu(conv2d(x, w0, b0, {.padding = 1})),
                                 {.kernel = 3, .stride = 2, .padding = 1});
    const Tensor r1 = relu(conv2d(p0, w1, b1, {.padding = 1}));
    const Tensor r2 = relu(conv2d(r1, w2, b2, {.padding = 1}) + p0);
    return linear(mean(r2, {2, 3}), wf, bf);
  }
};

TEST(BlockedLayout, ResidualNetworkRunsBlockedAndMatches) {
  manual_seed(11);
  const TinyResNet net;
  const std::string path = net.save();
  InferenceSession s(path, {.threads = 2});
  InferenceSession plain(path, {.optimize = false});
  for (const int64_t batch : {1, 3}) {
    const Tensor x = randn({batch, 3, 15, 15});
    const Tensor want = net.reference(x);
    for (int run = 0; run < 2; ++run) {  // the traced run, then the replay
      EXPECT_TRUE(allclose(s.run({{"x", x}})[0], want, {.rtol = 1e-4, .atol = 1e-4}));
    }
    EXPECT_TRUE(allclose(plain.run({{"x", x}})[0], want, {.rtol = 1e-4, .atol = 1e-4}));
    const graph::Graph& g = *s.last_graph();
    EXPECT_EQ(g.count("conv_blocked"), 3) << g.to_text();
    EXPECT_EQ(g.count("pool_blocked"), 2) << g.to_text();  // the max pool, the global average
    EXPECT_EQ(g.count("add") + g.count("relu") + g.count("convolution"), 0) << g.to_text();
    // The image's 3 channels are read plain by a blocked convolution; NHWC converts them.
    const bool nhwc = inference_activation_layout() == ActivationLayout::Nhwc;
    EXPECT_EQ(g.count("to_blocked"), nhwc ? 1 : 0) << g.to_text();
    // NHWC: the classifier reads the pooled NHWC values flattened as they are (its weight's
    // columns permuted once); a blocked layout converts back once.
    EXPECT_EQ(g.count("from_blocked"), nhwc ? 0 : 1) << g.to_text();
  }
}

TEST(BlockedLayout, OffByNameKeepsThePlainOps) {
  manual_seed(12);
  const TinyResNet net;
  InferenceSession s(net.save(), {.disable_passes = {"blocked_layout"}});
  const Tensor x = randn({2, 3, 15, 15});
  EXPECT_TRUE(allclose(s.run({{"x", x}})[0], net.reference(x), {.rtol = 1e-4, .atol = 1e-4}));
  EXPECT_EQ(s.last_graph()->count("conv_blocked"), 0);
  EXPECT_EQ(s.last_graph()->count("convolution_relu"), 2);
}

// A convolution result read by two consumers that cannot run blocked (a Sigmoid and the graph
// output) is converted back once and shared.
TEST(BlockedLayout, PlainReadersShareOneConversion) {
  manual_seed(13);
  ModelBuilder m(13);
  m.input("x", kF, {1, 16, 6, 6});
  const Tensor w = randn({16, 16, 3, 3}) * 0.1, b = randn({16});
  m.initializer("w", w);
  m.initializer("b", b);
  conv(m, "x", "w", "b", "c", 1, 1);
  m.node("Sigmoid", {"c"}, {"s"});
  m.output("c", kF);
  m.output("s", kF);
  InferenceSession s(m.save("two_readers"));
  const Tensor x = randn({1, 16, 6, 6});
  const Tensor c = conv2d(x, w, b, {.padding = 1});
  std::vector<Tensor> y = s.run({{"x", x}});
  EXPECT_TRUE(allclose(y[0], c, {.rtol = 1e-4, .atol = 1e-4}));
  EXPECT_TRUE(allclose(y[1], sigmoid(c), {.rtol = 1e-4, .atol = 1e-4}));
  EXPECT_EQ(s.last_graph()->count("from_blocked"), 1) << s.last_graph()->to_text();
  EXPECT_EQ(s.last_graph()->count("to_blocked"), 1) << s.last_graph()->to_text();
}

// Independent branches (the two stems of the residual block read the pooled value) may run at
// the same time under inter_op; whatever the cost model picks, the result is the same (to
// rounding: a primitive built for one thread may block its sums differently).
TEST(BlockedLayout, InterOpScheduleGivesTheSameResult) {
  manual_seed(14);
  const TinyResNet net;
  const std::string path = net.save();
  InferenceSession sequential(path), parallel(path, {.threads = 2, .inter_op = true});
  const Tensor x = randn({2, 3, 15, 15});
  const Tensor want = sequential.run({{"x", x}})[0];
  for (int run = 0; run < 2; ++run)
    EXPECT_TRUE(allclose(parallel.run({{"x", x}})[0], want, {.rtol = 1e-5, .atol = 1e-5}));
}

// W2's classifier: flatten(relu(conv(...)) ...) @ W, over convolutions of the given output
// channels (3x3, padding 1) on a [N, 2, 5, 4] input. Under NHWC, or a blocked layout whose
// channels fill its blocks, the activation is flattened in the layout's order and W's columns
// are permuted to match; the result must not change.
struct ConvClassifier {
  explicit ConvClassifier(const std::vector<int64_t>& channels) {
    int64_t in = 2;
    for (const int64_t c : channels) {
      weights.push_back(randn({c, in, 3, 3}) * (in == 2 ? 0.3 : 0.1));
      biases.push_back(randn({c}));
      in = c;
    }
    fw = randn({7, in * 5 * 4});
    fb = randn({7});
  }

  std::string save(const std::string& name) const {
    ModelBuilder m(13);
    m.input("x", kF, {"N", 2, 5, 4});
    std::string h = "x";
    for (std::size_t i = 0; i < weights.size(); ++i) {
      const std::string id = std::to_string(i);
      m.initializer("w" + id, weights[i]);
      m.initializer("b" + id, biases[i]);
      conv(m, h, "w" + id, "b" + id, "c" + id, 1, 1);
      m.node("Relu", {"c" + id}, {"r" + id});
      h = "r" + id;
    }
    m.initializer("fw", fw);
    m.initializer("fb", fb);
    m.node("Flatten", {h}, {"f"});
    auto* gemm = m.node("Gemm", {"f", "fw", "fb"}, {"y"});
    ModelBuilder::attr(gemm, "transB", int64_t{1});
    m.output("y", kF);
    return m.save(name);
  }

  Tensor reference(Tensor x) const {
    for (std::size_t i = 0; i < weights.size(); ++i)
      x = relu(conv2d(x, weights[i], biases[i], {.padding = 1}));
    return linear(x.flatten(1), fw, fb);
  }

  std::vector<Tensor> weights, biases;
  Tensor fw, fb;
};

// Runs the classifier twice (trace, replay) against its reference; returns the optimized graph.
const graph::Graph& expect_classifier_matches(InferenceSession& s, const ConvClassifier& net) {
  const Tensor x = randn({3, 2, 5, 4});
  for (int run = 0; run < 2; ++run)
    EXPECT_TRUE(allclose(s.run({{"x", x}})[0], net.reference(x), {.rtol = 1e-4, .atol = 1e-4}));
  return *s.last_graph();
}

TEST(BlockedLayout, FlattenedActivationsFeedTheClassifier) {
  manual_seed(15);
  const ConvClassifier net({6});
  InferenceSession s(net.save("flatten_classifier"));
  const graph::Graph& g = expect_classifier_matches(s, net);
  // 6 channels: nChw8c would flatten its padding too, so it converts back once; NHWC does not.
  const bool nhwc = inference_activation_layout() == ActivationLayout::Nhwc;
  EXPECT_EQ(g.count("from_blocked"), nhwc ? 0 : 1) << g.to_text();
}

// 16 channels after a Winograd-eligible convolution (nChw16c on AVX-512): every layout —
// NHWC, nChw16c, nChw8c (16 = 2 x 8) — flattens without converting.
TEST(BlockedLayout, FlattenedBlockedActivationsFeedTheClassifier) {
  manual_seed(17);
  const ConvClassifier net({16, 16});
  InferenceSession s(net.save("flatten_blocked_classifier"));
  const graph::Graph& g = expect_classifier_matches(s, net);
  EXPECT_EQ(g.count("from_blocked"), 0) << g.to_text();
}

TEST(BlockedLayout, WinogradStageMatches) {
  manual_seed(16);
  const TinyResNet net(32);
  InferenceSession s(net.save());
  const Tensor x = randn({2, 3, 15, 15});
  for (int run = 0; run < 2; ++run)
    EXPECT_TRUE(allclose(s.run({{"x", x}})[0], net.reference(x), {.rtol = 1e-4, .atol = 1e-4}));
  const graph::Graph& g = *s.last_graph();
  EXPECT_EQ(g.count("conv_blocked"), 3) << g.to_text();
  int winograd = 0;
  for (const graph::Node& n : g.nodes) {
    if (n.op == &op_conv_blocked())
      winograd += static_cast<const ConvBlockedAttrs*>(n.attrs.get())->winograd ? 1 : 0;
  }
  const bool eligible =
      winograd_eligible(ConvAttrs{.pad_l = {1, 1}, .pad_r = {1, 1}}, {32, 32, 3, 3});
  EXPECT_EQ(winograd, eligible ? 2 : 0) << g.to_text();  // the stage's two, not the stem (3 in)
}

// A convolution whose only reader is a non-overlapping max pool (W2's second layer): at batch 1
// in a blocked layout the pool goes into the conv_blocked node (ConvBlockedAttrs::pool); at
// batch 2 it stays its own pool_blocked node. A 4x4 input pooled 3x3 leaves a row and a column
// over (floor). Both match the plain ops.
TEST(BlockedLayout, BatchOnePoolGoesIntoTheConvolution) {
  manual_seed(18);
  const Tensor w0 = randn({32, 16, 3, 3}) * 0.1, b0 = randn({32});
  for (const int64_t k : {2, 3}) {
    const Tensor fw = randn({5, 32 * (14 / k) * (14 / k)}), fb = randn({5});
    ModelBuilder m(13);
    m.input("x", kF, {"N", 16, 14, 14});
    m.initializer("w0", w0);
    m.initializer("b0", b0);
    m.initializer("fw", fw);
    m.initializer("fb", fb);
    conv(m, "x", "w0", "b0", "c0", 1, 1);
    m.node("Relu", {"c0"}, {"r0"});
    auto* pool = m.node("MaxPool", {"r0"}, {"p0"});
    ModelBuilder::attr(pool, "kernel_shape", std::vector<int64_t>{k, k});
    ModelBuilder::attr(pool, "strides", std::vector<int64_t>{k, k});
    m.node("Flatten", {"p0"}, {"f"});
    auto* gemm = m.node("Gemm", {"f", "fw", "fb"}, {"y"});
    ModelBuilder::attr(gemm, "transB", int64_t{1});
    m.output("y", kF);
    InferenceSession s(m.save("pooled_conv_" + std::to_string(k)),
                       {.threads = 2, .batch_parallel = BatchParallel::Off});
    for (const int64_t batch : {1, 2}) {
      const Tensor x = randn({batch, 16, 14, 14});
      const Tensor want = linear(
          max_pool2d(relu(conv2d(x, w0, b0, {.padding = 1})), {.kernel = k}).flatten(1), fw, fb);
      for (int run = 0; run < 2; ++run)
        EXPECT_TRUE(allclose(s.run({{"x", x}})[0], want, {.rtol = 1e-4, .atol = 1e-4}));
      const graph::Graph& g = *s.last_graph();
      const bool blocked = inference_activation_layout() != ActivationLayout::Nhwc ||
                           winograd_eligible(ConvAttrs{}, {32, 16, 3, 3});
      const bool fused = blocked && batch == 1;
      EXPECT_EQ(g.count("pool_blocked") + g.count("max_pool2d"), fused ? 0 : 1) << g.to_text();
      for (const graph::Node& n : g.nodes) {
        if (n.op != &op_conv_blocked()) continue;
        const auto& a = *static_cast<const ConvBlockedAttrs*>(n.attrs.get());
        EXPECT_EQ(a.pool, (fused ? std::array<int64_t, 2>{k, k} : std::array<int64_t, 2>{1, 1}))
            << g.to_text();
      }
    }
  }
}

}  // namespace
}  // namespace ath::onnx
