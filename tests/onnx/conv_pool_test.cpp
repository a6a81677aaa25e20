// The inference-only conv_pool pass on a small CNN (W2's shape in miniature): the first
// convolution, its ReLU and the 2x2 max pool become one conv_relu_max_pool node that writes the
// layout the next convolution reads; the result matches the registry ops composed by hand, and
// the pass leaves alone what it must not fuse.
#include <athanor/athanor.h>
#include <athanor/graph/graph.h>
#include <athanor/onnx/session.h>
#include <athanor/ops/conv_pool.h>
#include <gtest/gtest.h>

#include "onnx/model_builder.h"

namespace ath::onnx {
namespace {

using testing::ModelBuilder;
constexpr int kF = ::onnx::TensorProto::FLOAT;

// x [N, in, 12, 10] -> Conv(20, 3x3, pad 1) -> Relu -> MaxPool(kernel, stride, pad)
// -> Conv(16, 3x3, pad 1) -> Relu -> Flatten -> Gemm(5). `indices_out` also returns the pool's
// indices (which forbids the fusion).
struct SmallCnn {
  explicit SmallCnn(int64_t in = 1, int64_t kernel = 2, int64_t stride = 2, int64_t pad = 0,
                    bool indices_out = false)
      : in(in), kernel(kernel), stride(stride), pad(pad), indices_out(indices_out) {
    const int64_t ph = (12 + 2 * pad - kernel) / stride + 1,
                  pw = (10 + 2 * pad - kernel) / stride + 1;
    fw = randn({5, 16 * ph * pw}) * 0.05;
  }
  int64_t in, kernel, stride, pad;
  bool indices_out;
  Tensor w0 = randn({20, in, 3, 3}) * 0.3, b0 = randn({20}) * 0.1;
  Tensor w1 = randn({16, 20, 3, 3}) * 0.1, b1 = randn({16}) * 0.1;
  Tensor fw, fb = randn({5});

  std::string save(const std::string& name) const {
    ModelBuilder m(13);
    m.input("x", kF, {"N", in, 12, 10});
    for (const auto& [n, t] :
         {std::pair{"w0", w0}, {"b0", b0}, {"w1", w1}, {"b1", b1}, {"fw", fw}, {"fb", fb}})
      m.initializer(n, t);
    auto pads = [](auto* node, int64_t p) {
      ModelBuilder::attr(node, "pads", std::vector<int64_t>{p, p, p, p});
    };
    pads(m.node("Conv", {"x", "w0", "b0"}, {"c0"}), 1);
    m.node("Relu", {"c0"}, {"r0"});
    auto* pool =
        m.node("MaxPool", {"r0"},
               indices_out ? std::vector<std::string>{"p", "idx"} : std::vector<std::string>{"p"});
    ModelBuilder::attr(pool, "kernel_shape", std::vector<int64_t>{kernel, kernel});
    ModelBuilder::attr(pool, "strides", std::vector<int64_t>{stride, stride});
    pads(pool, pad);
    pads(m.node("Conv", {"p", "w1", "b1"}, {"c1"}), 1);
    m.node("Relu", {"c1"}, {"r1"});
    m.node("Flatten", {"r1"}, {"f"});
    ModelBuilder::attr(m.node("Gemm", {"f", "fw", "fb"}, {"y"}), "transB", int64_t{1});
    m.output("y", kF);
    if (indices_out) m.output("idx", ::onnx::TensorProto::INT64);
    return m.save(name);
  }

  Tensor reference(const Tensor& x) const {
    Tensor h = relu(conv2d(x, w0, b0, {.padding = 1}));
    h = max_pool2d(h, {.kernel = kernel, .stride = stride, .padding = pad});
    h = relu(conv2d(h, w1, b1, {.padding = 1}));
    return linear(h.flatten(1), fw, fb);
  }
};

// Runs twice (trace, replay) against the reference; returns the optimized graph.
const graph::Graph& expect_matches(InferenceSession& s, const SmallCnn& net) {
  const Tensor x = randn({3, net.in, 12, 10});
  for (int run = 0; run < 2; ++run)
    EXPECT_TRUE(allclose(s.run({{"x", x}})[0], net.reference(x), {.rtol = 1e-4, .atol = 1e-4}));
  return *s.last_graph();
}

TEST(ConvPoolPass, FirstConvolutionReluAndPoolBecomeOneNodeInTheLayout) {
  manual_seed(21);
  const SmallCnn net;
  InferenceSession s(net.save("conv_pool_cnn"));
  const graph::Graph& g = expect_matches(s, net);
  ASSERT_EQ(g.count("conv_relu_max_pool"), 1) << g.to_text();
  EXPECT_EQ(g.count("pool_blocked"), 0) << g.to_text();  // the only pool went into the node
  EXPECT_EQ(g.count("to_blocked"), 0) << g.to_text();    // it writes what conv_blocked reads
  for (const graph::Node& n : g.nodes) {
    if (n.op == &op_conv_relu_max_pool()) {
      EXPECT_NE(static_cast<const ConvPoolAttrs*>(n.attrs.get())->dst_layout,
                ActivationLayout::Nchw);
    }
  }
}

TEST(ConvPoolPass, OffByNameKeepsTheConvolutionAndThePool) {
  manual_seed(22);
  const SmallCnn net;
  InferenceSession s(net.save("conv_pool_off"), {.disable_passes = {"conv_pool"}});
  const graph::Graph& g = expect_matches(s, net);
  EXPECT_EQ(g.count("conv_relu_max_pool"), 0) << g.to_text();
  EXPECT_EQ(g.count("pool_blocked"), 1) << g.to_text();
}

TEST(ConvPoolPass, LeavesAloneWhatItMustNotFuse) {
  manual_seed(23);
  // Overlapping windows (ResNet's 3x3 stride-2 pool), too many input channels, indices read.
  const SmallCnn overlapping(1, 3, 2, 1), wide(8), indices(1, 2, 2, 0, true);
  for (const auto* net : {&overlapping, &wide}) {
    InferenceSession s(net->save("conv_pool_no_" + std::to_string(net->in)));
    const graph::Graph& g = expect_matches(s, *net);
    EXPECT_EQ(g.count("conv_relu_max_pool"), 0) << g.to_text();
  }
  InferenceSession s(indices.save("conv_pool_indices"));
  const Tensor x = randn({2, 1, 12, 10});
  const std::vector<Tensor> out = s.run({{"x", x}});
  EXPECT_TRUE(allclose(out[0], indices.reference(x), {.rtol = 1e-4, .atol = 1e-4}));
  EXPECT_EQ(s.last_graph()->count("conv_relu_max_pool"), 0) << s.last_graph()->to_text();
}

}  // namespace
}  // namespace ath::onnx
