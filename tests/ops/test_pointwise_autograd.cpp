// Pointwise ops beyond the table: second derivatives (every backward formula is built from
// registered ops, and saved outputs re-attach to their node under create_graph), gradients that
// must stay finite where the forward saturates in float32, and zero gradients of the
// piecewise-constant ops.
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "athanor/athanor.h"

namespace ath {
namespace {

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

Tensor uniform64(const Shape& shape, double lo, double hi, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(static_cast<std::size_t>(numel(shape)));
  for (double& x : v) x = dist(rng);
  return from_vector(v, shape);
}

// gradcheck of the first derivative: d/dx of grad(sum(f(x) * w)) with a fixed random w, so
// the second derivative is checked against finite differences of the first.
GradcheckResult gradgradcheck(const Fn& f, std::vector<Tensor> inputs) {
  for (Tensor& t : inputs) t.requires_grad_();
  Tensor w;
  {
    Tensor probe = f(inputs);
    w = uniform64(probe.shape(), 0.5, 1.5, 7);
  }
  auto first = [&](const std::vector<Tensor>& x) {
    AutoGradMode on(true);  // gradcheck's finite differences run under no_grad
    Tensor y = mul(f(x), w).sum();
    return grad({y}, x, {}, {.retain_graph = true, .create_graph = true}, /*allow_unused=*/true);
  };
  return gradcheck(first, inputs, {.atol = 1e-5, .rtol = 1e-3});
}

struct Case {
  const char* name;
  Fn f;
  std::vector<std::pair<double, double>> ranges;  // one per input
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class DoubleBackward : public ::testing::TestWithParam<Case> {};

TEST_P(DoubleBackward, SecondDerivativeMatchesFiniteDifferences) {
  const Case& c = GetParam();
  std::vector<Tensor> in;
  uint64_t seed = 1;
  for (auto [lo, hi] : c.ranges) in.push_back(uniform64({2, 3}, lo, hi, seed++));
  GradcheckResult r = gradgradcheck(c.f, in);
  EXPECT_TRUE(r.ok) << r.message;
}

Fn unary(Tensor (*f)(const Tensor&)) {
  return [f](const std::vector<Tensor>& x) { return f(x[0]); };
}

const Case kCases[] = {
    {"exp", unary(exp), {{-2, 2}}},
    {"exp2", unary(exp2), {{-2, 2}}},
    {"log", unary(log), {{0.3, 3}}},
    {"log2", unary(log2), {{0.3, 3}}},
    {"log1p", unary(log1p), {{-0.5, 3}}},
    {"expm1", unary(expm1), {{-2, 2}}},
    {"sqrt", unary(sqrt), {{0.3, 3}}},
    {"rsqrt", unary(rsqrt), {{0.3, 3}}},
    {"reciprocal", unary(reciprocal), {{0.3, 3}}},
    {"sin", unary(sin), {{-3, 3}}},
    {"cos", unary(cos), {{-3, 3}}},
    {"tan", unary(tan), {{-1, 1}}},
    {"tanh", unary(tanh), {{-2, 2}}},
    {"sigmoid", unary(sigmoid), {{-3, 3}}},
    {"erf", unary(erf), {{-2, 2}}},
    {"abs", unary(abs), {{0.2, 2}}},
    {"relu", unary(relu), {{-2, 2}}},
    {"silu", unary(silu), {{-3, 3}}},
    {"mish", unary(mish), {{-3, 3}}},
    {"selu", unary(selu), {{-2, 2}}},
    {"hardswish", unary(hardswish), {{-2.9, 2.9}}},
    {"gelu", [](const auto& x) { return gelu(x[0]); }, {{-3, 3}}},
    {"gelu_tanh", [](const auto& x) { return gelu(x[0], GeluApprox::Tanh); }, {{-3, 3}}},
    {"elu", [](const auto& x) { return elu(x[0], 1.3); }, {{-2, 2}}},
    {"softplus", [](const auto& x) { return softplus(x[0], 2, 3); }, {{-2, 2}}},
    {"leaky_relu", [](const auto& x) { return leaky_relu(x[0], 0.1); }, {{-2, 2}}},
    {"pow_scalar", [](const auto& x) { return pow(x[0], 2.5); }, {{0.3, 2}}},
    {"pow", [](const auto& x) { return pow(x[0], x[1]); }, {{0.3, 2}, {-1.5, 1.5}}},
    {"rpow", [](const auto& x) { return pow(1.7, x[0]); }, {{-1, 1}}},
    {"maximum", [](const auto& x) { return maximum(mul(x[0], x[0]), x[1]); }, {{-1, 1}, {0, 1}}},
    {"lerp",
     [](const auto& x) { return lerp(mul(x[0], x[1]), x[1], x[2]); },
     {{-1, 1}, {-1, 1}, {0, 1}}},
    {"fmod", [](const auto& x) { return fmod(mul(x[0], x[1]), x[1]); }, {{1.1, 1.9}, {0.5, 1}}},
    {"remainder",
     [](const auto& x) { return remainder(mul(x[0], x[0]), x[1]); },
     {{1.1, 1.3}, {0.5, 0.6}}},
    {"clamp", [](const auto& x) { return clamp(mul(x[0], x[0]), 0.1, 0.7); }, {{-1, 1}}},
};

INSTANTIATE_TEST_SUITE_P(Pointwise, DoubleBackward, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

// Saturated inputs in float32: the forward is finite, so the gradient must be too (no
// 0 * inf = NaN from the branch that does not apply).
TEST(PointwiseGrad, FiniteWhereTheForwardSaturates) {
  Tensor x = from_vector<float>({-200, -100, -30, 0.5, 30, 100, 200}).requires_grad_();
  const std::pair<const char*, std::function<Tensor(const Tensor&)>> fns[] = {
      {"elu", [](const Tensor& t) { return elu(t); }},
      {"selu", [](const Tensor& t) { return selu(t); }},
      {"sigmoid", [](const Tensor& t) { return sigmoid(t); }},
      {"tanh", [](const Tensor& t) { return tanh(t); }},
      {"silu", [](const Tensor& t) { return silu(t); }},
      {"mish", [](const Tensor& t) { return mish(t); }},
      {"softplus", [](const Tensor& t) { return softplus(t); }},
      {"gelu", [](const Tensor& t) { return gelu(t); }},
      {"gelu_tanh", [](const Tensor& t) { return gelu(t, GeluApprox::Tanh); }},
  };
  for (const auto& [name, f] : fns) {
    SCOPED_TRACE(name);
    Tensor y = f(x);
    for (float v : y.to_vector<float>()) EXPECT_TRUE(std::isfinite(v)) << v;
    Tensor g = grad({y.sum()}, {x})[0];
    for (float v : g.to_vector<float>()) EXPECT_TRUE(std::isfinite(v)) << v;
  }
}

// torch gives zeros, not an undefined gradient, for the piecewise-constant ops.
TEST(PointwiseGrad, RoundingAndSignHaveZeroGradients) {
  const std::pair<const char*, std::function<Tensor(const Tensor&)>> fns[] = {
      {"sign", [](const Tensor& t) { return sign(t); }},
      {"floor", [](const Tensor& t) { return floor(t); }},
      {"ceil", [](const Tensor& t) { return ceil(t); }},
      {"round", [](const Tensor& t) { return round(t); }},
      {"trunc", [](const Tensor& t) { return trunc(t); }},
  };
  for (const auto& [name, f] : fns) {
    SCOPED_TRACE(name);
    Tensor x = from_vector<float>({-1.5, 0.25, 2.7}).requires_grad_();
    f(x).sum().backward();
    ASSERT_TRUE(x.grad().defined());
    for (float v : x.grad().to_vector<float>()) EXPECT_EQ(v, 0.0f);
  }
}

TEST(PointwiseGrad, ComparisonsRecordNoGraph) {
  Tensor x = from_vector<float>({-1, 0.5, 2}).requires_grad_();
  Tensor m = gt(x, 0.0);
  EXPECT_EQ(m.dtype(), kBool);
  EXPECT_FALSE(m.requires_grad());
  EXPECT_FALSE(isnan(x).requires_grad());
  EXPECT_FALSE(logical_not(x).requires_grad());
}

TEST(PointwiseGrad, PowWithABoolExponent) {
  Tensor a = from_vector<float>({2, 3}).requires_grad_();
  Tensor b = from_vector<bool>({true, false});
  Tensor y = pow(a, b);
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{2, 1}));
  y.sum().backward();
  EXPECT_EQ(a.grad().to_vector<float>(), (std::vector<float>{1, 0}));
}

}  // namespace
}  // namespace ath
