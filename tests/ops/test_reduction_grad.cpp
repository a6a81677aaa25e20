// Second-order gradients of the reductions (their backward formulas are built from registered
// ops, so gradcheck of the first gradient checks the second), and the one documented gap.
#include <gtest/gtest.h>

#include <random>

#include "athanor/athanor.h"

namespace ath {
namespace {

using Fn = std::function<Tensor(const Tensor&)>;

Tensor input(const Shape& shape, double lo, double hi, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(static_cast<std::size_t>(numel(shape)));
  for (double& x : v) x = dist(rng);
  return from_vector(v, shape);
}

// gradcheck of x -> d(sum(w * f(x)))/dx, w fixed: checks f's second derivative.
void expect_double_backward(const Fn& f, Tensor x) {
  x.requires_grad_();
  auto first = [&](const std::vector<Tensor>& in) {
    AutoGradMode enable(true);  // gradcheck evaluates fn under no-grad for finite differences
    Tensor y = f(in[0]);
    Tensor w = input(y.shape(), 0.5, 1.5, 99);
    return grad({y}, {in[0]}, {w}, {.retain_graph = true, .create_graph = true});
  };
  GradcheckResult r = gradcheck(first, {x}, {.atol = 1e-5, .rtol = 1e-3});
  EXPECT_TRUE(r.ok) << r.message;
}

TEST(ReductionGrad, SecondOrder) {
  const Tensor x = input({3, 4}, -1.5, 1.5, 1);
  const Tensor pos = input({3, 4}, 0.5, 1.5, 2);
  const std::vector<std::tuple<const char*, Fn, const Tensor*>> cases = {
      {"square", [](const Tensor& t) { return mul(t, t).sum({1}); }, &x},
      {"var", [](const Tensor& t) { return var(t, {1}); }, &x},
      {"std", [](const Tensor& t) { return std(t, {0}, 0); }, &x},
      {"logsumexp", [](const Tensor& t) { return logsumexp(t, {1}); }, &x},
      {"norm2", [](const Tensor& t) { return norm(t, 2, {1}); }, &x},
      {"norm3", [](const Tensor& t) { return norm(t, 3); }, &x},
      {"norm1", [](const Tensor& t) { return norm(t, 1, {0}); }, &x},
      {"prod", [](const Tensor& t) { return prod(t, {1}); }, &pos},
      {"cumprod", [](const Tensor& t) { return cumprod(t, 1); }, &pos},
      {"cumsum", [](const Tensor& t) { return cumsum(t, 0); }, &x},
      {"amax", [](const Tensor& t) { return mul(amax(t, {1}), amax(t, {1})); }, &x},
      {"max_dim", [](const Tensor& t) { return mul(max(t, 0).values, t.sum({0})); }, &x},
  };
  for (const auto& [name, f, in] : cases) {
    SCOPED_TRACE(name);
    expect_double_backward(f, in->clone());
  }
}

TEST(ReductionGrad, ProdWithZerosSecondOrder) {
  // prod's zero-safe gradient goes through exclusive cumprods, which differentiate once more.
  Tensor x = from_vector<double>({1.5, 0, -2, 0.5, 0.7, 3, -1, 2}, Shape{2, 4});
  expect_double_backward([](const Tensor& t) { return prod(t, {1}); }, x);
}

TEST(ReductionGrad, CumprodWithZerosDoubleBackwardIsReported) {
  Tensor x = from_vector<double>({1.5, 0, -2, 0.5}).requires_grad_();
  Tensor y = cumprod(x, 0);
  std::vector<Tensor> g =
      grad({y}, {x}, {ones_like(y)}, {.retain_graph = true, .create_graph = true});
  // First order is exact: d/dx_k sum_i prod_{j<=i} x_j.
  std::vector<double> got = g[0].to_vector<double>();
  EXPECT_DOUBLE_EQ(got[0], 1.0);
  EXPECT_DOUBLE_EQ(got[1], 1.5 + 1.5 * -2 + 1.5 * -2 * 0.5);
  EXPECT_DOUBLE_EQ(got[2], 0.0);
  EXPECT_DOUBLE_EQ(got[3], 0.0);
  EXPECT_THROW(grad({g[0].sum()}, {x}), NotImplementedError);
}

}  // namespace
}  // namespace ath
