// Convolution and pooling against PyTorch (tests/golden/conv_pool.json from
// tools/golden/conv_pool.py): outputs, and input/weight/bias gradients for a fixed upstream
// gradient, in float32 through the oneDNN kernels.
#include <gtest/gtest.h>

#include "support/golden.h"

namespace ath::testing {
namespace {

constexpr double kRtol = 1e-4, kAtol = 1e-5;

Int2 int2(const nlohmann::json& j) {
  if (j.is_array()) return Int2(j[0].get<int64_t>(), j[1].get<int64_t>());
  return Int2(j.get<int64_t>());
}

// Runs the case's op on leaves x (and w, b when present); returns the output.
Tensor run_case(const GoldenCase& c, std::map<std::string, Tensor>& leaves, Tensor& indices) {
  const auto& a = c.attrs;
  const std::string& n = c.name;
  Tensor x = leaves.at("x");
  if (n.rfind("conv2d", 0) == 0) {
    Conv2dOptions o;
    if (a.contains("stride")) o.stride = int2(a["stride"]);
    if (a.contains("dilation")) o.dilation = int2(a["dilation"]);
    if (a.contains("groups")) o.groups = a["groups"].get<int64_t>();
    if (a["padding"].is_string()) {
      o.padding = a["padding"].get<std::string>();
    } else {
      Int2 p = int2(a["padding"]);
      o.padding = ConvPadding(p[0], p[1]);
    }
    return conv2d(x, leaves.at("w"), leaves.at("b"), o);
  }
  if (n == "conv1d") {
    return conv1d(x, leaves.at("w"), leaves.at("b"),
                  {.stride = a["stride"].get<int64_t>(),
                   .padding = a["padding"].get<int64_t>(),
                   .dilation = a["dilation"].get<int64_t>(),
                   .groups = a["groups"].get<int64_t>()});
  }
  if (n.rfind("conv_transpose2d", 0) == 0) {
    return conv_transpose2d(x, leaves.at("w"), leaves.at("b"),
                            {.stride = int2(a["stride"]),
                             .padding = int2(a["padding"]),
                             .output_padding = int2(a["output_padding"]),
                             .groups = a["groups"].get<int64_t>(),
                             .dilation = int2(a["dilation"])});
  }
  if (n.rfind("max_pool2d", 0) == 0) {
    auto [y, idx] = max_pool2d_with_indices(x, {.kernel = int2(a["kernel"]),
                                                .stride = int2(a["stride"]),
                                                .padding = int2(a["padding"]),
                                                .dilation = int2(a["dilation"]),
                                                .ceil_mode = a["ceil_mode"].get<bool>()});
    indices = idx;
    return y;
  }
  if (n.rfind("avg_pool2d", 0) == 0) {
    return avg_pool2d(x, {.kernel = int2(a["kernel"]),
                          .stride = int2(a["stride"]),
                          .padding = int2(a["padding"]),
                          .ceil_mode = a["ceil_mode"].get<bool>(),
                          .count_include_pad = a["count_include_pad"].get<bool>()});
  }
  if (n == "adaptive_avg_pool2d") return adaptive_avg_pool2d(x, int2(a["output"]));
  throw std::runtime_error("unknown golden case " + n);
}

TEST(ConvGolden, MatchesPyTorchForwardAndBackward) {
  auto cases = load_golden("conv_pool");
  ASSERT_GE(cases.size(), 10u);
  for (const GoldenCase& c : cases) {
    SCOPED_TRACE(c.name);
    std::map<std::string, Tensor> leaves;
    for (const char* k : {"x", "w", "b"}) {
      if (c.tensors.count(k)) leaves[k] = c.t(k).clone().requires_grad_();
    }
    Tensor indices;
    Tensor y = run_case(c, leaves, indices);
    expect_close(y, c.t("y"), kRtol, kAtol, c.name + " output");
    if (c.tensors.count("indices")) {
      ASSERT_TRUE(indices.defined());
      expect_close(indices, c.t("indices"), 0, 0, c.name + " indices");
    }
    y.backward(c.t("gy"));
    for (auto& [k, leaf] : leaves) {
      ASSERT_TRUE(leaf.grad().defined()) << k;
      expect_close(leaf.grad(), c.t("g" + k), kRtol, kAtol, c.name + " grad of " + k);
    }
  }
}

}  // namespace
}  // namespace ath::testing
