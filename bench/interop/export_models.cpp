// athanor's side of bench/interop/onnx_export_ort.sh: exports W2's CNN, W3's LSTM and W4's
// transformer (the workload sizes of bench/e2e/workloads.h, random initialisation from a fixed
// seed) with onnx::export_model, and writes for fixed random inputs — at the workload's batch
// size and at another one, the batch dim being symbolic — the inputs and athanor's eager
// outputs as .npy files, which the Python side runs through ONNX Runtime.
//
//   build/bench/export_models OUT_DIR
//   -> OUT_DIR/W2.onnx, W2_b64_input.npy, W2_b64_output.npy, W2_b3_input.npy, ... (W3, W4, and
//      smaller models covering other layers: x_bilstm, x_bn_cnn, x_gru, x_deconv_gn)
#include <cstdio>
#include <fstream>
#include <string>

#include "athanor/athanor.h"
#include "athanor/models/char_lstm.h"
#include "athanor/models/char_transformer.h"
#include "athanor/models/fashion.h"
#include "athanor/nn/activation.h"
#include "athanor/nn/batch_norm.h"
#include "athanor/nn/conv.h"
#include "athanor/nn/flatten.h"
#include "athanor/nn/group_norm.h"
#include "athanor/nn/linear.h"
#include "athanor/nn/pooling.h"
#include "athanor/nn/rnn.h"
#include "athanor/nn/sequential.h"
#include "athanor/onnx/export.h"

using namespace ath;

namespace {

// NumPy's .npy format, version 1.0: magic, header length, a Python dict literal padded with
// spaces to a multiple of 64 bytes, then the C-order little-endian data.
void write_npy(const std::string& path, const Tensor& t) {
  const Tensor c = t.contiguous();
  const char* descr = c.dtype() == kFloat32 ? "<f4" : c.dtype() == kInt64 ? "<i8" : nullptr;
  ATH_CHECK(descr != nullptr, DTypeError, "write_npy: {} is not float32 or int64",
            dtype_name(c.dtype()));
  std::string shape;  // "3," for one dim (a Python tuple), "3, 4" for more
  for (std::size_t i = 0; i < c.shape().size(); ++i)
    shape += fmt::format("{}{}", i == 0 ? "" : ", ", c.shape()[i]);
  if (c.dim() == 1) shape += ",";
  std::string header =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", descr, shape);
  const std::size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::ofstream f(path, std::ios::binary);
  f.write("\x93NUMPY\x01\x00", 8);
  const auto len = static_cast<uint16_t>(header.size());
  const char len_bytes[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  f.write(len_bytes, 2);
  f.write(header.data(), static_cast<std::streamsize>(header.size()));
  f.write(static_cast<const char*>(c.data_ptr()), static_cast<std::streamsize>(c.nbytes()));
  ATH_CHECK(f.good(), IOError, "write_npy: cannot write {}", path);
}

void run(const std::string& dir, const std::string& name, nn::Module& model,
         const std::vector<Tensor>& inputs) {
  const std::string path = dir + "/" + name + ".onnx";
  const onnx::ExportResult r = onnx::export_model(model, {inputs[0]}, path);
  std::printf("%s: %s, %lld nodes, %lld initializers\n", name.c_str(), path.c_str(),
              static_cast<long long>(r.nodes), static_cast<long long>(r.initializers));
  model.eval();
  NoGradGuard no_grad;
  for (const Tensor& x : inputs) {
    const std::string stem = fmt::format("{}/{}_b{}", dir, name, x.size(0));
    write_npy(stem + "_input.npy", x);
    write_npy(stem + "_output.npy", model(x));
  }
}

// Beyond the workloads (rows x_*): a 2-layer bidirectional LSTM without bias (the reverse
// direction, the second layer reading both directions) and a CNN with batch norm (running
// statistics), average and adaptive pooling, tanh-GELU and softmax.
struct BiLstm : nn::Module {
  nn::LSTM lstm{{.input_size = 16,
                 .hidden_size = 32,
                 .num_layers = 2,
                 .bias = false,
                 .batch_first = true,
                 .bidirectional = true}};
  BiLstm() : Module("BiLstm") { register_module("lstm", lstm); }
  Tensor forward(const Tensor& x) override { return lstm(x); }
};

std::shared_ptr<nn::Sequential> bn_cnn() {
  auto m = std::make_shared<nn::Sequential>();
  m->emplace_back<nn::Conv2d>(nn::Conv2dOptions{.in = 3, .out = 16, .kernel = 3, .padding = 1});
  auto& bn = m->emplace_back<nn::BatchNorm2d>(nn::BatchNormOptions{.features = 16});
  {
    NoGradGuard no_grad;
    bn.running_mean.copy_(randn({16}) * 0.1);
    bn.running_var.copy_(rand({16}) + 0.5);
  }
  m->emplace_back<nn::GELU>(nn::GELUOptions{.approximate = GeluApprox::Tanh});
  m->emplace_back<nn::AvgPool2d>(nn::AvgPool2dOptions{.kernel = 2});
  m->emplace_back<nn::AdaptiveAvgPool2d>(nn::AdaptiveAvgPool2dOptions{.output_size = 2});
  m->emplace_back<nn::Flatten>();
  m->emplace_back<nn::Linear>(nn::LinearOptions{.in = 64, .out = 10});
  m->emplace_back<nn::Softmax>(nn::SoftmaxOptions{.dim = 1});
  return m;
}

// A 2-layer batch-first GRU (ONNX GRU with linear_before_reset = 1) and a time-major,
// bidirectional one without bias on its output (the transposes around it), then a linear head
// on every step.
struct GruModel : nn::Module {
  nn::GRU gru{{.input_size = 16, .hidden_size = 32, .num_layers = 2, .batch_first = true}};
  nn::GRU tm{{.input_size = 32, .hidden_size = 12, .bias = false, .bidirectional = true}};
  nn::Linear head{{.in = 24, .out = 10}};
  GruModel() : Module("GruModel") {
    register_module("gru", gru);
    register_module("tm", tm);
    register_module("head", head);
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = tm(gru(x).transpose(0, 1)).transpose(0, 1);  // [B, T, 24]
    return head(h);
  }
};

// A decoder: transposed convolutions (stride 2 with padding 1; one with output_padding and
// groups, one without bias), each followed by group norm (ONNX InstanceNormalization on the
// grouped tensor and the per-channel affine) and SiLU.
std::shared_ptr<nn::Sequential> deconv_gn() {
  auto m = std::make_shared<nn::Sequential>();
  m->emplace_back<nn::ConvTranspose2d>(
      nn::ConvTranspose2dOptions{.in = 8, .out = 16, .kernel = 4, .stride = 2, .padding = 1});
  auto& gn1 = m->emplace_back<nn::GroupNorm>(nn::GroupNormOptions{.groups = 4, .channels = 16});
  m->emplace_back<nn::SiLU>();
  m->emplace_back<nn::ConvTranspose2d>(nn::ConvTranspose2dOptions{.in = 16,
                                                                  .out = 4,
                                                                  .kernel = 3,
                                                                  .stride = 2,
                                                                  .padding = 1,
                                                                  .output_padding = 1,
                                                                  .groups = 2,
                                                                  .bias = false});
  auto& gn2 = m->emplace_back<nn::GroupNorm>(nn::GroupNormOptions{.groups = 2, .channels = 4});
  {
    NoGradGuard no_grad;  // an affine other than the identity, as after training
    for (nn::GroupNorm* gn : {&gn1, &gn2}) {
      gn->weight.copy_(randn(gn->weight.shape()) * 0.5 + 1.0);
      gn->bias.copy_(randn(gn->bias.shape()) * 0.1);
    }
  }
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  try {
    manual_seed(0);
    auto cnn = models::fashion_cnn();
    run(dir, "W2", *cnn, {randn({64, 1, 28, 28}), randn({3, 1, 28, 28})});
    manual_seed(0);
    models::CharLstm lstm;
    run(dir, "W3", lstm, {randint(0, 256, {32, 64}), randint(0, 256, {5, 64})});
    manual_seed(0);
    models::CharTransformer transformer;
    run(dir, "W4", transformer, {randint(0, 256, {16, 128}), randint(0, 256, {3, 128})});
    manual_seed(0);
    BiLstm bilstm;
    run(dir, "x_bilstm", bilstm, {randn({8, 20, 16}), randn({3, 20, 16})});
    manual_seed(0);
    auto cnn_bn = bn_cnn();
    run(dir, "x_bn_cnn", *cnn_bn, {randn({8, 3, 16, 16}), randn({3, 3, 16, 16})});
    manual_seed(0);
    GruModel gru;
    run(dir, "x_gru", gru, {randn({8, 20, 16}), randn({3, 20, 16})});
    manual_seed(0);
    auto deconv = deconv_gn();
    run(dir, "x_deconv_gn", *deconv, {randn({8, 8, 7, 7}), randn({3, 8, 7, 7})});
  } catch (const Error& e) {
    std::fprintf(stderr, "export_models: %s\n", e.what());
    return 1;
  }
  return 0;
}
