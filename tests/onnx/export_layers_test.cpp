// onnx::export_model on the nn layers outside the workloads: GRU (one and two layers, time-major
// and batch_first, without bias, bidirectional, a given initial state), ConvTranspose2d
// (stride, padding, output_padding, groups, dilation, bias), GroupNorm (written through
// InstanceNormalization at opset 17), BatchNorm1d on [N, C] and [N, C, L], the pools, dropout
// and the activation modules. Each file passes libonnx's checker and strict shape inference,
// and InferenceSession reproduces the module's eager forward at the example's batch size and at
// another (allclose, rtol = atol = 1e-5). A layer still without an ONNX form fails the export
// with a NotImplementedError naming its op.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "athanor/nn/activation.h"
#include "athanor/nn/batch_norm.h"
#include "athanor/nn/conv.h"
#include "athanor/nn/dropout.h"
#include "athanor/nn/group_norm.h"
#include "athanor/nn/pooling.h"
#include "athanor/nn/rnn.h"
#include "athanor/nn/sequential.h"
#include "athanor/onnx/export.h"
#include "athanor/onnx/session.h"
#include "athanor/ops/ops.h"
#include "athanor/ops/rnn_cells.h"
#include "athanor/tensor/grad_mode.h"
#include "export_check.h"

namespace ath::onnx::testing {
namespace {

void expect_allclose(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  EXPECT_TRUE(allclose(got, want, {.rtol = 1e-5, .atol = 1e-5}))
      << what << ": max abs diff " << amax(abs(got - want)).item<float>();
}

// Exports m (dynamic batch) with example x, checks the file with libonnx, then compares the
// session with the eager forward at x and at `other` (another size of dim 0). Returns the
// exported model.
::onnx::ModelProto roundtrip(nn::Module& m, const Tensor& x, const Tensor& other,
                             const std::string& name) {
  const std::string path = temp_model(name);
  export_model(m, {x}, path, {.opset = 17, .dynamic_batch = true});
  check_with_libonnx(path);
  InferenceSession s(path, {.threads = 2});
  m.eval();
  NoGradGuard no_grad;
  for (const Tensor& in : {x, other}) {
    const std::vector<Tensor> got = s.run({{"input", in}});
    EXPECT_EQ(got.size(), 1u) << name;
    if (got.size() == 1) expect_allclose(got[0], m(in), fmt::format("{} at {}", name, in.size(0)));
  }
  return read_model(path);
}

Shape batched(int64_t batch, const Shape& sample) {
  Shape s{batch};
  for (int64_t d : sample) s.push_back(d);
  return s;
}

// Attribute attr of the first node of type op (-1 / {} when absent).
const ::onnx::AttributeProto* find_attribute(const ::onnx::ModelProto& m, const std::string& op,
                                             const std::string& attr) {
  for (const auto& n : m.graph().node()) {
    if (n.op_type() != op) continue;
    for (const auto& a : n.attribute()) {
      if (a.name() == attr) return &a;
    }
  }
  return nullptr;
}
int64_t attribute(const ::onnx::ModelProto& m, const std::string& op, const std::string& attr) {
  const ::onnx::AttributeProto* a = find_attribute(m, op, attr);
  return a != nullptr ? a->i() : -1;
}
std::vector<int64_t> ints_attribute(const ::onnx::ModelProto& m, const std::string& op,
                                    const std::string& attr) {
  const ::onnx::AttributeProto* a = find_attribute(m, op, attr);
  return a != nullptr ? std::vector<int64_t>(a->ints().begin(), a->ints().end())
                      : std::vector<int64_t>{};
}

// ---- GRU ----------------------------------------------------------------------------------

struct GruCase {
  std::string name;
  nn::GRUOptions options;
};

class ExportGru : public ::testing::TestWithParam<GruCase> {};

// dim 0 of the input is the batch with batch_first, else the sequence length: dynamic_batch
// then makes the time steps symbolic, and the two runs differ in their length.
TEST_P(ExportGru, MatchesEager) {
  const GruCase& p = GetParam();
  manual_seed(21);
  nn::GRU gru(p.options);
  const int64_t in = p.options.input_size;
  const auto ops = op_counts(roundtrip(gru, randn({3, 5, in}), randn({6, 5, in}), "gru_" + p.name));
  const int64_t dirs = p.options.bidirectional ? 2 : 1;
  EXPECT_EQ(ops.at("GRU"), p.options.num_layers * dirs);
  // The input projection went into the GRU node.
  EXPECT_EQ(ops.count("Gemm") + ops.count("MatMul"), 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Layers, ExportGru,
    ::testing::Values(
        GruCase{"one_layer", {.input_size = 4, .hidden_size = 6}},
        GruCase{"one_layer_batch_first", {.input_size = 4, .hidden_size = 6, .batch_first = true}},
        GruCase{"two_layers", {.input_size = 4, .hidden_size = 6, .num_layers = 2}},
        GruCase{"two_layers_batch_first",
                {.input_size = 4, .hidden_size = 6, .num_layers = 2, .batch_first = true}},
        GruCase{"no_bias", {.input_size = 4, .hidden_size = 5, .bias = false, .batch_first = true}},
        GruCase{"bidirectional",
                {.input_size = 4,
                 .hidden_size = 5,
                 .num_layers = 2,
                 .batch_first = true,
                 .bidirectional = true}}),
    [](const auto& info) { return info.param.name; });

// A time-major GRU inside a batch-first model: dim 0 is the batch, the GRU reads [T, B, I].
struct TimeMajorGru : nn::Module {
  nn::GRU gru{{.input_size = 4, .hidden_size = 6, .num_layers = 2}};
  TimeMajorGru() : Module("TimeMajorGru") { register_module("gru", gru); }
  Tensor forward(const Tensor& x) override {
    return gru(x.transpose(0, 1)).transpose(0, 1).contiguous();
  }
};

TEST(ExportLayers, TimeMajorGruAtTwoBatchSizes) {
  manual_seed(22);
  TimeMajorGru m;
  const ::onnx::ModelProto model =
      roundtrip(m, randn({2, 7, 4}), randn({5, 7, 4}), "gru_time_major");
  // Parameters under their own names; PyTorch's formulation of the reset gate.
  EXPECT_EQ(attribute(model, "GRU", "linear_before_reset"), 1);
  std::set<std::string> inits;
  for (const auto& t : model.graph().initializer()) inits.insert(t.name());
  for (const char* n : {"gru.weight_ih_l0", "gru.weight_hh_l1", "gru.bias_ih_l1", "gru.bias_hh_l0"})
    EXPECT_TRUE(inits.count(n)) << n;
}

// gru_sequence on a projection the exporter does not recognize, with a given initial state and
// both outputs: the GRU node takes xg with an identity input weight and initial_h.
TEST(ExportLayers, GruSequenceOnAnyProjectionWithInitialState) {
  manual_seed(23);
  const int64_t h = 5;
  const Tensor w_hh = randn({3 * h, h}) * 0.3, b_hh = randn({3 * h}) * 0.1;
  const auto fn = [&](const std::vector<Tensor>& in) {
    GruSequenceResult r =
        gru_sequence(tanh(in[0]), w_hh, b_hh, in[1], {.reverse = true, .batch_first = true});
    return std::vector<Tensor>{r.output, r.h};
  };
  auto inputs = [&](int64_t b) { return std::vector<Tensor>{randn({b, 4, 3 * h}), randn({b, h})}; };
  const std::string path = temp_model("gru_any");
  export_function(fn, inputs(3), {{"w_hh", w_hh}, {"b_hh", b_hh}}, path);
  check_with_libonnx(path);
  InferenceSession s(path);
  for (int64_t b : {3, 6}) {
    const std::vector<Tensor> in = inputs(b);
    const std::vector<Tensor> got = s.run({{"input_0", in[0]}, {"input_1", in[1]}});
    NoGradGuard no_grad;
    const std::vector<Tensor> want = fn(in);
    ASSERT_EQ(got.size(), 2u);
    for (int i = 0; i < 2; ++i) expect_allclose(got[i], want[i], fmt::format("output {}", i));
  }
}

// ---- ConvTranspose2d ------------------------------------------------------------------------

TEST(ExportLayers, ConvTranspose2d) {
  manual_seed(24);
  struct Case {
    std::string name;
    nn::ConvTranspose2dOptions options;
  };
  const std::vector<Case> cases = {
      {"plain", {.in = 4, .out = 6, .kernel = 3}},
      {"stride_pad_outpad_groups",
       {.in = 4,
        .out = 6,
        .kernel = 3,
        .stride = 2,
        .padding = 1,
        .output_padding = 1,
        .groups = 2}},
      {"asymmetric_no_bias",
       {.in = 3,
        .out = 2,
        .kernel = {3, 2},
        .stride = {2, 3},
        .padding = {0, 1},
        .output_padding = {1, 2},
        .bias = false}},
      {"dilated", {.in = 2, .out = 4, .kernel = 3, .stride = 2, .padding = 2, .dilation = 2}},
  };
  for (const Case& c : cases) {
    nn::ConvTranspose2d ct(c.options);
    const ::onnx::ModelProto m =
        roundtrip(ct, randn({2, c.options.in, 5, 6}), randn({4, c.options.in, 5, 6}), c.name);
    EXPECT_EQ(op_counts(m).at("ConvTranspose"), 1) << c.name;
    // As PyTorch writes it (pads >= 0, which ONNX requires; output_padding apart).
    const Int2 p = c.options.padding, op = c.options.output_padding;
    EXPECT_EQ(ints_attribute(m, "ConvTranspose", "pads"),
              (std::vector<int64_t>{p[0], p[1], p[0], p[1]}))
        << c.name;
    const std::vector<int64_t> want_op =
        op == Int2(0) ? std::vector<int64_t>{} : std::vector<int64_t>{op[0], op[1]};
    EXPECT_EQ(ints_attribute(m, "ConvTranspose", "output_padding"), want_op) << c.name;
    EXPECT_EQ(attribute(m, "ConvTranspose", "group"), c.options.groups) << c.name;
  }
}

// ---- GroupNorm ----------------------------------------------------------------------------

TEST(ExportLayers, GroupNormThroughInstanceNormalization) {
  manual_seed(25);
  struct Case {
    std::string name;
    nn::GroupNormOptions options;
    Shape sample;  // one sample's shape
  };
  const std::vector<Case> cases = {
      {"gn_4d", {.groups = 3, .channels = 6}, {6, 5, 4}},
      {"gn_3d", {.groups = 2, .channels = 8, .eps = 1e-3}, {8, 7}},
      {"gn_2d", {.groups = 4, .channels = 8}, {8}},
      {"gn_no_affine", {.groups = 1, .channels = 4, .affine = false}, {4, 3, 3}},
  };
  for (const Case& c : cases) {
    nn::GroupNorm gn(c.options);
    if (c.options.affine) {
      NoGradGuard no_grad;
      gn.weight.copy_(randn({c.options.channels}));
      gn.bias.copy_(randn({c.options.channels}));
    }
    const Shape a = batched(2, c.sample), b = batched(5, c.sample);
    const auto ops = op_counts(roundtrip(gn, randn(a) * 3.0 + 1.0, randn(b) * 3.0 + 1.0, c.name));
    EXPECT_EQ(ops.at("InstanceNormalization"), 1) << c.name;
    EXPECT_EQ(ops.count("GroupNormalization"), 0u) << c.name;  // opset 18 only
  }
}

// A decoder block: upsampling, group norm, SiLU.
TEST(ExportLayers, ConvTransposeGroupNormBlock) {
  manual_seed(26);
  nn::Sequential m;
  m.emplace_back<nn::ConvTranspose2d>(
      nn::ConvTranspose2dOptions{.in = 8, .out = 8, .kernel = 4, .stride = 2, .padding = 1});
  m.emplace_back<nn::GroupNorm>(nn::GroupNormOptions{.groups = 4, .channels = 8});
  m.emplace_back<nn::SiLU>();
  const auto ops = op_counts(roundtrip(m, randn({2, 8, 6, 6}), randn({3, 8, 6, 6}), "deconv_gn"));
  EXPECT_EQ(ops.at("ConvTranspose"), 1);
  EXPECT_EQ(ops.at("InstanceNormalization"), 1);
}

// ---- layers that exported already -----------------------------------------------------------

TEST(ExportLayers, BatchNorm1dOnTwoAndThreeDims) {
  manual_seed(27);
  nn::BatchNorm1d bn({.features = 6});
  {
    NoGradGuard no_grad;
    bn.running_mean.copy_(randn({6}) * 0.5);
    bn.running_var.copy_(rand({6}) + 0.5);
    bn.weight.copy_(randn({6}));
    bn.bias.copy_(randn({6}));
  }
  for (const Shape& sample : {Shape{6}, Shape{6, 5}}) {
    const Shape a = batched(3, sample), b = batched(7, sample);
    const std::string name = fmt::format("bn1d_{}d", a.size());
    EXPECT_EQ(op_counts(roundtrip(bn, randn(a), randn(b), name)).at("BatchNormalization"), 1);
  }
}

TEST(ExportLayers, PoolsDropoutAndActivationModules) {
  manual_seed(28);
  nn::Sequential m;
  m.emplace_back<nn::LeakyReLU>(nn::LeakyReLUOptions{.negative_slope = 0.2});
  m.emplace_back<nn::AvgPool2d>(nn::AvgPool2dOptions{.kernel = 2});
  m.emplace_back<nn::ELU>(nn::ELUOptions{.alpha = 0.7});
  m.emplace_back<nn::Dropout>(nn::DropoutOptions{.p = 0.3});
  m.emplace_back<nn::SiLU>();
  m.emplace_back<nn::Sigmoid>();
  m.emplace_back<nn::Tanh>();
  m.emplace_back<nn::Softmax>(nn::SoftmaxOptions{.dim = 1});
  m.emplace_back<nn::AdaptiveAvgPool2d>(nn::AdaptiveAvgPool2dOptions{.output_size = 1});
  const auto ops =
      op_counts(roundtrip(m, randn({2, 3, 8, 8}), randn({5, 3, 8, 8}), "pools_activations"));
  for (const char* op :
       {"LeakyRelu", "AveragePool", "Elu", "Sigmoid", "Tanh", "Softmax", "GlobalAveragePool"})
    EXPECT_EQ(ops.count(op), 1u) << op;
  EXPECT_EQ(ops.count("Dropout"), 0u);  // eval: identity, nothing written
}

// ---- still unsupported ----------------------------------------------------------------------

TEST(ExportLayers, UnsupportedLayerNamesItsOp) {
  nn::GRUCell cell({.input_size = 3, .hidden_size = 4});
  const std::string path = temp_model("gru_cell");
  try {
    export_model(cell, {randn({2, 3})}, path);
    FAIL() << "expected NotImplementedError";
  } catch (const NotImplementedError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("op 'gru_cell_pointwise'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("no ONNX form"), std::string::npos) << msg;
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace ath::onnx::testing
