// The inference-only bn_fold pass: BatchNormalization after a Conv and after a Gemm (a [N, C]
// input) folds into their weights; results equal the unfolded model to rounding; a batch norm
// whose input something else also reads stays.
#include <athanor/athanor.h>
#include <athanor/graph/graph.h>
#include <athanor/onnx/session.h>
#include <gtest/gtest.h>

#include "onnx/model_builder.h"

namespace ath::onnx {
namespace {

using testing::ModelBuilder;
constexpr int kF = ::onnx::TensorProto::FLOAT;

void batch_norm_node(ModelBuilder& m, const std::string& x, const std::string& prefix,
                     int64_t channels, const std::string& y) {
  m.initializer(prefix + "g", rand({channels}) + 0.5);
  m.initializer(prefix + "b", randn({channels}));
  m.initializer(prefix + "m", randn({channels}) * 0.2);
  m.initializer(prefix + "v", rand({channels}) + 0.5);
  auto* n = m.node("BatchNormalization",
                   {x, prefix + "g", prefix + "b", prefix + "m", prefix + "v"}, {y});
  ModelBuilder::attr(n, "epsilon", 1e-3f);
}

std::string conv_bn_model(bool second_reader) {
  ModelBuilder m(13);
  m.input("x", kF, {"N", 3, 9, 9});
  m.initializer("w", randn({16, 3, 3, 3}) * 0.3);
  m.initializer("wb", randn({16}));
  auto* conv = m.node("Conv", {"x", "w", "wb"}, {"c"});
  ModelBuilder::attr(conv, "pads", std::vector<int64_t>{1, 1, 1, 1});
  batch_norm_node(m, "c", "bn0", 16, "n");
  m.node("Relu", {"n"}, {"r"});
  m.node("GlobalAveragePool", {"r"}, {"p"});
  m.node("Flatten", {"p"}, {"f"});
  m.initializer("fw", randn({16, 8}));
  m.node("Gemm", {"f", "fw"}, {"h"});
  batch_norm_node(m, "h", "bn1", 8, "y");
  m.output("y", kF);
  if (second_reader) m.output("c", kF);
  return m.save(second_reader ? "conv_bn_read" : "conv_bn");
}

TEST(BatchNormFold, ConvAndGemmAbsorbTheirBatchNorms) {
  manual_seed(21);
  const std::string path = conv_bn_model(false);
  InferenceSession folded(path), plain(path, {.optimize = false});
  const Tensor x = randn({4, 3, 9, 9});
  const Tensor want = plain.run({{"x", x}})[0];
  for (int run = 0; run < 2; ++run)
    EXPECT_TRUE(allclose(folded.run({{"x", x}})[0], want, {.rtol = 1e-5, .atol = 1e-5}));
  EXPECT_EQ(folded.last_graph()->count("batch_norm"), 0) << folded.last_graph()->to_text();
  EXPECT_EQ(plain.last_graph()->count("batch_norm"), 2);
  // The folded convolution then takes its relu (and the blocked layout) like any other.
  EXPECT_EQ(folded.last_graph()->count("conv_blocked"), 1) << folded.last_graph()->to_text();
}

TEST(BatchNormFold, OffByNameOrWhenThePreActivationIsReadElsewhere) {
  manual_seed(22);
  const Tensor x = randn({2, 3, 9, 9});
  InferenceSession off(conv_bn_model(false), {.disable_passes = {"bn_fold"}});
  off.run({{"x", x}});
  EXPECT_EQ(off.last_graph()->count("batch_norm"), 2);
  const std::string path = conv_bn_model(true);
  InferenceSession read(path), plain(path, {.optimize = false});
  const std::vector<Tensor> got = read.run({{"x", x}}), want = plain.run({{"x", x}});
  EXPECT_EQ(read.last_graph()->count("batch_norm"), 1) << read.last_graph()->to_text();
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(allclose(got[i], want[i], {.rtol = 1e-5, .atol = 1e-5}));
}

}  // namespace
}  // namespace ath::onnx
