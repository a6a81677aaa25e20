// onnx::export_model on the workload models (W2's CNN, W3's LSTM, W4's transformer) and on
// small modules covering the common ops: each exported file passes libonnx's checker and strict
// shape inference, and InferenceSession reproduces the module's eager forward at the example's
// batch size and at another one. Unsupported ops are listed all at once, with no file written.
#include "athanor/onnx/export.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "athanor/models/char_lstm.h"
#include "athanor/models/char_transformer.h"
#include "athanor/models/fashion.h"
#include "athanor/nn/activation.h"
#include "athanor/nn/batch_norm.h"
#include "athanor/nn/conv.h"
#include "athanor/nn/dropout.h"
#include "athanor/nn/embedding.h"
#include "athanor/nn/linear.h"
#include "athanor/nn/normalization.h"
#include "athanor/nn/pooling.h"
#include "athanor/nn/rnn.h"
#include "athanor/onnx/session.h"
#include "athanor/ops/ops.h"
#include "athanor/ops/rnn_cells.h"
#include "athanor/tensor/grad_mode.h"
#include "export_check.h"

namespace ath::onnx::testing {
namespace {

namespace fs = std::filesystem;

// Max |a - b| / max(|b|, 1e-3)-style check: within rtol relative to the reference's scale.
void expect_close(const Tensor& got, const Tensor& want, double rtol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const double scale = amax(abs(want)).item<float>();
  const double diff = amax(abs(got - want)).item<float>();
  EXPECT_LE(diff, rtol * std::max(scale, 1.0)) << what << ": max abs diff " << diff;
}

// Exports m with example x, then compares the session with the eager forward at x and at
// `other` (another batch size). Returns the model's path.
std::string roundtrip(nn::Module& m, const Tensor& x, const Tensor& other, const std::string& name,
                      ExportOptions options = {}) {
  const std::string path = temp_model(name);
  const bool training = m.is_training();
  const ExportResult r = export_model(m, {x}, path, options);
  EXPECT_EQ(m.is_training(), training);  // the module's mode is restored
  EXPECT_GT(r.nodes, 0);
  check_with_libonnx(path);
  InferenceSession s(path, {.threads = 2});
  m.eval();
  NoGradGuard no_grad;
  for (const Tensor& in : {x, other}) {
    const Tensor want = m(in);
    const std::vector<Tensor> got = s.run({{"input", in}});
    EXPECT_EQ(got.size(), 1u);
    if (got.size() == 1) {
      expect_close(got[0], want, 1e-5, fmt::format("{} at batch {}", name, in.size(0)));
    }
  }
  return path;
}

std::vector<std::string> initializer_names(const ::onnx::ModelProto& m) {
  std::vector<std::string> r;
  for (const auto& t : m.graph().initializer()) r.push_back(t.name());
  return r;
}

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST(OnnxExport, W2CnnMatchesEagerAtAnotherBatch) {
  manual_seed(1);
  auto cnn = models::fashion_cnn();
  const std::string path = roundtrip(*cnn, randn({4, 1, 28, 28}), randn({7, 1, 28, 28}), "w2");
  const ::onnx::ModelProto m = read_model(path);
  // Parameters keep their state_dict names; the input's batch dim is symbolic.
  const auto inits = initializer_names(m);
  for (const char* n : {"0.weight", "0.bias", "3.weight", "7.weight", "9.bias"})
    EXPECT_TRUE(has(inits, n)) << n;
  ASSERT_EQ(m.graph().input_size(), 1);
  EXPECT_EQ(m.graph().input(0).name(), "input");
  EXPECT_EQ(m.graph().input(0).type().tensor_type().shape().dim(0).dim_param(), "batch");
  EXPECT_EQ(m.graph().output(0).name(), "output");
  EXPECT_EQ(m.graph().output(0).type().tensor_type().shape().dim(0).dim_param(), "batch");
  const auto ops = op_counts(m);
  EXPECT_EQ(ops.at("Conv"), 2);
  EXPECT_EQ(ops.at("MaxPool"), 2);
  EXPECT_EQ(ops.at("Gemm"), 2);
  EXPECT_EQ(ops.at("Relu"), 3);
  EXPECT_EQ(ops.at("Reshape"), 1);  // the flatten, with -1 for the batch
}

TEST(OnnxExport, W3LstmIsOneLstmNode) {
  manual_seed(2);
  models::CharLstm lm;
  const std::string path = roundtrip(lm, randint(0, 256, {2, 16}), randint(0, 256, {5, 16}), "w3");
  const ::onnx::ModelProto m = read_model(path);
  const auto ops = op_counts(m);
  EXPECT_EQ(ops.at("LSTM"), 1);
  EXPECT_EQ(ops.at("Gather"), 1);  // the embedding
  // The input projection went into the LSTM node: no GEMM besides the head's MatMul.
  EXPECT_EQ(ops.count("Gemm"), 0u);
  const auto inits = initializer_names(m);
  for (const char* n : {"emb.weight", "lstm.weight_ih_l0", "lstm.weight_hh_l0", "lstm.bias_ih_l0",
                        "lstm.bias_hh_l0", "head.weight", "head.bias"})
    EXPECT_TRUE(has(inits, n)) << n;
}

TEST(OnnxExport, BidirectionalTwoLayerLstmWithoutBias) {
  manual_seed(6);
  nn::LSTM lstm({.input_size = 5,
                 .hidden_size = 7,
                 .num_layers = 2,
                 .bias = false,
                 .batch_first = true,
                 .bidirectional = true});
  const std::string path = roundtrip(lstm, randn({3, 4, 5}), randn({2, 4, 5}), "bilstm");
  EXPECT_EQ(op_counts(read_model(path)).at("LSTM"), 4);  // 2 layers x 2 directions
}

// lstm_sequence on a projection the exporter does not recognize (and a non-zero initial state,
// time-major, reversed): the LSTM node takes xg with an identity input weight.
TEST(OnnxExport, LstmSequenceOnAnyProjection) {
  manual_seed(7);
  const int64_t h = 6;
  const Tensor w_hh = randn({4 * h, h}) * 0.3;
  const auto fn = [&](const std::vector<Tensor>& in) {
    LstmSequenceResult r =
        lstm_sequence(tanh(in[0]), w_hh, in[1], in[2], {.reverse = true, .batch_first = false});
    return std::vector<Tensor>{r.output, r.h, r.c};
  };
  const std::vector<Tensor> ex{randn({5, 3, 4 * h}), randn({3, h}), randn({3, h})};
  const std::string path = temp_model("lstm_any");
  export_function(fn, ex, {{"w_hh", w_hh}}, path, {.dynamic_batch = false});
  check_with_libonnx(path);
  InferenceSession s(path);
  const std::vector<Tensor> got =
      s.run({{"input_0", ex[0]}, {"input_1", ex[1]}, {"input_2", ex[2]}});
  const std::vector<Tensor> want = fn(ex);
  ASSERT_EQ(got.size(), 3u);
  for (int i = 0; i < 3; ++i) expect_close(got[i], want[i], 1e-5, fmt::format("output {}", i));
}

TEST(OnnxExport, W4TransformerMatchesEagerAtAnotherBatch) {
  manual_seed(3);
  models::CharTransformer lm;
  const std::string path = roundtrip(lm, randint(0, 256, {2, 24}), randint(0, 256, {3, 24}), "w4");
  const ::onnx::ModelProto m = read_model(path);
  const auto ops = op_counts(m);
  EXPECT_EQ(ops.at("LayerNormalization"), 5);
  EXPECT_EQ(ops.at("Softmax"), 2);
  EXPECT_EQ(ops.at("Erf"), 2);
  const auto inits = initializer_names(m);
  for (const char* n : {"tok.weight", "pos.weight", "encoder.layers.0.self_attn.in_proj_weight",
                        "encoder.layers.1.linear2.bias", "norm.weight", "head.weight"})
    EXPECT_TRUE(has(inits, n)) << n;
}

// The common layers outside the workloads: batch norm (eval), average pools, sigmoid/tanh/
// GELU(tanh), softmax, log_softmax, transpose, cat, sub/div, dropout (nothing in eval).
struct Mixed : nn::Module {
  nn::Conv2d conv{{.in = 3, .out = 8, .kernel = 3, .stride = 2, .padding = 1}};
  nn::BatchNorm2d bn{{.features = 8}};
  nn::AvgPool2d pool{{.kernel = 2}};
  nn::AdaptiveAvgPool2d gap{{.output_size = 1}};
  nn::Dropout drop{{.p = 0.5}};
  nn::Linear fc{{.in = 16, .out = 6}};
  Mixed() : Module("Mixed") {
    register_module("conv", conv);
    register_module("bn", bn);
    register_module("pool", pool);
    register_module("gap", gap);
    register_module("drop", drop);
    register_module("fc", fc);
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = relu(bn(conv(x)));                    // [B, 8, 8, 8]
    Tensor a = pool(h).flatten(1);                   // [B, 128]
    Tensor g = gap(sigmoid(h)).flatten(1);           // [B, 8]
    Tensor t = tanh(h).mean({2, 3}) / 2.0 - g;       // [B, 8]
    Tensor c = cat({g, t}, 1);                       // [B, 16]
    Tensor y = fc(drop(gelu(c, GeluApprox::Tanh)));  // [B, 6]
    Tensor s = softmax(y, 1) + log_softmax(y, 1);    // [B, 6]
    Tensor p = s.view({s.size(0), 2, 3}).transpose(1, 2).reshape({s.size(0), 6});
    return p + a.slice(1, 0, 6);
  }
};

TEST(OnnxExport, CommonLayersMatchEager) {
  manual_seed(4);
  Mixed m;
  // Non-trivial running statistics, as after training.
  {
    NoGradGuard no_grad;
    m.bn.running_mean.copy_(randn({8}) * 0.1);
    m.bn.running_var.copy_(rand({8}) + 0.5);
  }
  const std::string path = roundtrip(m, randn({3, 3, 16, 16}), randn({6, 3, 16, 16}), "mixed");
  const auto ops = op_counts(read_model(path));
  EXPECT_EQ(ops.count("Dropout"), 0u);
  EXPECT_EQ(ops.at("BatchNormalization"), 1);
  const auto inits = initializer_names(read_model(path));
  EXPECT_TRUE(has(inits, "bn.running_mean"));
  EXPECT_TRUE(has(inits, "bn.running_var"));
}

TEST(OnnxExport, LayerNormBelowOpset17IsDecomposed) {
  manual_seed(5);
  nn::LayerNorm ln({.shape = {4, 5}});
  {
    NoGradGuard no_grad;
    ln.weight.copy_(randn({4, 5}));
    ln.bias.copy_(randn({4, 5}));
  }
  const std::string path =
      roundtrip(ln, randn({2, 3, 4, 5}), randn({4, 3, 4, 5}), "ln13", {.opset = 13});
  const ::onnx::ModelProto m = read_model(path);
  EXPECT_EQ(m.opset_import(0).version(), 13);
  EXPECT_EQ(op_counts(m).count("LayerNormalization"), 0u);
}

TEST(OnnxExport, StaticBatchKeepsFixedDims) {
  nn::Linear fc({.in = 4, .out = 2});
  const std::string path = temp_model("static");
  export_model(fc, {randn({3, 4})}, path, {.dynamic_batch = false});
  const ::onnx::ModelProto m = read_model(path);
  EXPECT_EQ(m.graph().input(0).type().tensor_type().shape().dim(0).dim_value(), 3);
  InferenceSession s(path);
  const Tensor x = randn({3, 4});
  NoGradGuard no_grad;
  expect_close(s.run({{"input", x}})[0], fc(x), 1e-6, "static");
}

TEST(OnnxExport, FunctionsOfSeveralInputsWithNames) {
  const Tensor w = randn({4, 4});
  const std::string path = temp_model("fn");
  const ExportResult r = export_function(
      [&](const std::vector<Tensor>& in) {
        Tensor h = matmul(in[0], w) + in[1];
        return std::vector<Tensor>{h, relu(h).sum({1})};
      },
      {randn({2, 4}), randn({2, 4})}, {{"w", w}}, path,
      {.input_names = {"a", "b"}, .output_names = {"h", "s"}});
  EXPECT_EQ(r.inputs, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(r.outputs, (std::vector<std::string>{"h", "s"}));
  check_with_libonnx(path);
  EXPECT_TRUE(has(initializer_names(read_model(path)), "w"));
  InferenceSession s(path);
  const Tensor a = randn({5, 4}), b = randn({5, 4});
  const std::vector<Tensor> got = s.run({{"a", a}, {"b", b}});
  const Tensor h = matmul(a, w) + b;
  expect_close(got[0], h, 1e-6, "h");
  expect_close(got[1], relu(h).sum({1}), 1e-6, "s");
}

TEST(OnnxExport, UnsupportedOpsAreAllListedAndNoFileIsWritten) {
  const std::string path = temp_model("unsupported");
  {
    std::ofstream f(path);
    f << "previous contents";
  }
  try {
    export_function(
        [](const std::vector<Tensor>& in) {
          Tensor top = topk(in[0], 2, 1).first;
          Tensor sorted = sort(in[0], 1).first;
          return std::vector<Tensor>{top.sum({1}) + sorted.select(1, 0)};
        },
        {randn({3, 5})}, {}, path);
    FAIL() << "expected NotImplementedError";
  } catch (const NotImplementedError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("2 node(s)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("op 'topk' (node 0:"), std::string::npos) << msg;
    EXPECT_NE(msg.find("op 'sort'"), std::string::npos) << msg;
  }
  std::ifstream f(path);
  std::string contents((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_EQ(contents, "previous contents");
}

TEST(OnnxExport, BatchDependentConstantFailsUnderDynamicBatch) {
  const auto fn = [](const std::vector<Tensor>& in) {
    // A number computed on the host from the batch size: baked into the graph.
    return std::vector<Tensor>{in[0] * static_cast<double>(in[0].size(0))};
  };
  const std::string path = temp_model("batch_constant");
  EXPECT_THROW(export_function(fn, {randn({2, 3})}, {}, path), NotImplementedError);
  EXPECT_FALSE(fs::exists(path));
  EXPECT_NO_THROW(export_function(fn, {randn({2, 3})}, {}, path, {.dynamic_batch = false}));
}

TEST(OnnxExport, HostReadFailsWithTheTracersReason) {
  const auto fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{in[0] * in[0].sum().item<float>()};
  };
  try {
    export_function(fn, {randn({2, 3})}, {}, temp_model("host_read"));
    FAIL() << "expected NotImplementedError";
  } catch (const NotImplementedError& e) {
    EXPECT_NE(std::string(e.what()).find("host read"), std::string::npos) << e.what();
  }
}

TEST(OnnxExport, BadOptions) {
  nn::Linear fc({.in = 4, .out = 2});
  EXPECT_THROW(export_model(fc, {randn({2, 4})}, temp_model("bad"), {.opset = 11}), ValueError);
  EXPECT_THROW(export_model(fc, {randn({2, 4}), randn({2, 4})}, temp_model("bad")), ValueError);
  EXPECT_THROW(export_model(fc, {randn({2, 4})}, temp_model("bad"), {.input_names = {"a", "b"}}),
               ValueError);
}

TEST(OnnxExport, ExportableOpsCoverTheWorkloads) {
  const std::vector<std::string> ops = exportable_ops();
  for (const char* op : {"convolution", "max_pool2d", "linear", "relu", "view", "embedding",
                         "lstm_sequence", "addmm", "layer_norm", "split_heads", "merge_heads",
                         "attention_softmax", "gelu", "matmul", "permute", "add", "arange"})
    EXPECT_TRUE(has(ops, op)) << op;
}

}  // namespace
}  // namespace ath::onnx::testing
