// NN functional ops against PyTorch 1.13 (tests/golden/nn_functional.json, written by
// tools/golden/nn_functional.py): outputs, the gradients for a fixed upstream gradient, and
// batch_norm's updated running statistics.
#include <gtest/gtest.h>

#include "athanor/athanor.h"
#include "support/golden.h"

namespace ath::testing {
namespace {

constexpr double kRtol = 1e-4, kAtol = 1e-5;

const GoldenCase& golden(const std::string& name) {
  static const std::vector<GoldenCase> cases = load_golden("nn_functional");
  for (const GoldenCase& c : cases) {
    if (c.name == name) return c;
  }
  throw std::runtime_error("nn_functional golden has no case " + name);
}

Tensor leaf(const GoldenCase& c, const std::string& key) {
  return c.t(key).clone().requires_grad_();
}

// Backpropagates gy through y and compares each input's gradient with the golden one.
void expect_grads(const GoldenCase& c, const Tensor& y,
                  const std::vector<std::pair<Tensor, std::string>>& inputs) {
  std::vector<Tensor> xs;
  for (const auto& [t, key] : inputs) xs.push_back(t);
  std::vector<Tensor> g = grad({y}, xs, {c.t("gy")});
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    expect_close(g[i], c.t(inputs[i].second), kRtol, kAtol, c.name + " " + inputs[i].second);
  }
}

TEST(NNFunctionalGolden, SoftmaxAndLogSoftmaxAlongAMiddleDim) {
  for (const char* name : {"softmax_dim1", "log_softmax_dim1"}) {
    const GoldenCase& c = golden(name);
    Tensor x = leaf(c, "x");
    int64_t dim = c.attrs["dim"].get<int64_t>();
    Tensor y = c.attrs["op"] == "softmax" ? softmax(x, dim) : log_softmax(x, dim);
    expect_close(y, c.t("y"), kRtol, kAtol, c.name + " y");
    expect_grads(c, y, {{x, "dx"}});
  }
}

TEST(NNFunctionalGolden, LayerNormWithAffine) {
  const GoldenCase& c = golden("layer_norm_affine");
  Tensor x = leaf(c, "x"), w = leaf(c, "w"), b = leaf(c, "b");
  Shape ns(c.attrs["normalized_shape"].get<std::vector<int64_t>>());
  Tensor y = layer_norm(x, ns, w, b, c.attrs["eps"].get<double>());
  expect_close(y, c.t("y"), kRtol, kAtol, "y");
  expect_grads(c, y, {{x, "dx"}, {w, "dw"}, {b, "db"}});
}

TEST(NNFunctionalGolden, BatchNormTrainAndEval) {
  for (const char* name : {"batch_norm_train", "batch_norm_eval"}) {
    const GoldenCase& c = golden(name);
    Tensor x = leaf(c, "x"), w = leaf(c, "w"), b = leaf(c, "b");
    Tensor rm = c.t("running_mean").clone(), rv = c.t("running_var").clone();
    Tensor y = batch_norm(x, rm, rv, w, b, c.attrs["training"].get<bool>(),
                          c.attrs["momentum"].get<double>(), c.attrs["eps"].get<double>());
    expect_close(y, c.t("y"), kRtol, kAtol, c.name + " y");
    expect_close(rm, c.t("running_mean_after"), kRtol, kAtol, c.name + " running_mean");
    expect_close(rv, c.t("running_var_after"), kRtol, kAtol, c.name + " running_var");
    expect_grads(c, y, {{x, "dx"}, {w, "dw"}, {b, "db"}});
  }
}

TEST(NNFunctionalGolden, GroupNorm) {
  const GoldenCase& c = golden("group_norm");
  Tensor x = leaf(c, "x"), w = leaf(c, "w"), b = leaf(c, "b");
  Tensor y =
      group_norm(x, c.attrs["num_groups"].get<int64_t>(), w, b, c.attrs["eps"].get<double>());
  expect_close(y, c.t("y"), kRtol, kAtol, "y");
  expect_grads(c, y, {{x, "dx"}, {w, "dw"}, {b, "db"}});
}

TEST(NNFunctionalGolden, EmbeddingWithPaddingIdx) {
  const GoldenCase& c = golden("embedding_padding");
  Tensor w = leaf(c, "weight");
  Tensor y = embedding(w, c.t("indices"), c.attrs["padding_idx"].get<int64_t>());
  expect_close(y, c.t("y"), 0, 0, "y");
  expect_grads(c, y, {{w, "dweight"}});
}

}  // namespace
}  // namespace ath::testing
