// Values and gradients of pointwise ops against torch in float64
// (tests/golden/pointwise_values.json from tools/golden/pointwise_values.py): the inputs include
// every kink and threshold, so this pins torch's conventions for which side a gradient takes.
#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "support/golden.h"

namespace ath::testing {
namespace {

const std::map<std::string, std::function<Tensor(const Tensor&)>>& ops() {
  static const std::map<std::string, std::function<Tensor(const Tensor&)>> m = {
      {"relu", [](const Tensor& x) { return relu(x); }},
      {"leaky_relu", [](const Tensor& x) { return leaky_relu(x, 0.2); }},
      {"elu", [](const Tensor& x) { return elu(x, 1.3); }},
      {"selu", [](const Tensor& x) { return selu(x); }},
      {"gelu", [](const Tensor& x) { return gelu(x); }},
      {"gelu_tanh", [](const Tensor& x) { return gelu(x, GeluApprox::Tanh); }},
      {"silu", [](const Tensor& x) { return silu(x); }},
      {"mish", [](const Tensor& x) { return mish(x); }},
      {"softplus", [](const Tensor& x) { return softplus(x, 2, 3); }},
      {"hardtanh", [](const Tensor& x) { return hardtanh(x, -0.5, 0.8); }},
      {"hardsigmoid", [](const Tensor& x) { return hardsigmoid(x); }},
      {"hardswish", [](const Tensor& x) { return hardswish(x); }},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }},
      {"tanh", [](const Tensor& x) { return tanh(x); }},
      {"erf", [](const Tensor& x) { return erf(x); }},
      {"abs", [](const Tensor& x) { return abs(x); }},
      {"sign", [](const Tensor& x) { return sign(x); }},
      {"clamp", [](const Tensor& x) { return clamp(x, -0.5, 0.8); }},
      {"floor", [](const Tensor& x) { return floor(x); }},
      {"round", [](const Tensor& x) { return round(x); }},
      {"pow_2", [](const Tensor& x) { return pow(x, 2); }},
      {"pow_3.5_abs", [](const Tensor& x) { return pow(abs(x), 3.5); }},
      {"maximum_half", [](const Tensor& x) { return maximum(x, full_like(x, 0.5)); }},
      {"remainder_1.5", [](const Tensor& x) { return remainder(x, 1.5); }},
      {"fmod_1.5", [](const Tensor& x) { return fmod(x, 1.5); }},
  };
  return m;
}

const std::vector<GoldenCase>& golden() {
  static const std::vector<GoldenCase> cases = load_golden("pointwise_values");
  return cases;
}

std::vector<std::size_t> case_indices() {
  std::vector<std::size_t> v(golden().size());
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = i;
  return v;
}

class PointwiseGolden : public ::testing::TestWithParam<std::size_t> {};

TEST_P(PointwiseGolden, ValuesAndGradientsMatchTorch) {
  const GoldenCase& c = golden().at(GetParam());
  auto it = ops().find(c.attrs.at("op").get<std::string>());
  ASSERT_NE(it, ops().end()) << "no athanor call for golden op " << c.name;
  Tensor x = c.t("x").clone().requires_grad_();
  Tensor y = it->second(x);
  expect_close(y, c.t("y"), 1e-12, 1e-14, c.name + " forward");
  y.sum().backward();
  ASSERT_TRUE(x.grad().defined()) << c.name;
  // torch's hardsigmoid gradient uses 1/6 rounded to float even for float64; ours is exact.
  const double rtol = c.name == "hardsigmoid" ? 1e-7 : 1e-12;
  expect_close(x.grad(), c.t("dx"), rtol, 1e-14, c.name + " gradient");
}

INSTANTIATE_TEST_SUITE_P(Torch, PointwiseGolden, ::testing::ValuesIn(case_indices()),
                         [](const ::testing::TestParamInfo<std::size_t>& i) {
                           std::string s = golden().at(i.param).name;
                           for (char& ch : s) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return s;
                         });

}  // namespace
}  // namespace ath::testing
