// Second derivatives through matmul, linear, convolution and pooling: the first-order gradients
// (computed with create_graph) are gradchecked as functions of the inputs and of the upstream
// gradient, which exercises the backward ops' own backward formulas (conv's weight gradient,
// the transposed convolution, the pooling adjoints, max-pool's gather).
#include <gtest/gtest.h>

#include <random>

#include "athanor/athanor.h"

namespace ath {
namespace {

Tensor f64(const Shape& shape, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> dist;
  std::vector<double> v(static_cast<std::size_t>(numel(shape)));
  for (double& x : v) x = dist(rng);
  return from_vector(v, shape);
}

// A nonlinearity, so second derivatives reach every input.
Tensor sq(const Tensor& t) { return t * t; }

// Gradchecks (inputs, gy) -> d<f(inputs), gy>/d(inputs): the first-order gradients as
// functions of both the inputs and the upstream gradient.
void check_second_order(const std::function<Tensor(const std::vector<Tensor>&)>& f,
                        std::vector<Tensor> inputs, const Tensor& gy) {
  inputs.push_back(gy);
  for (Tensor& t : inputs) t.requires_grad_();
  auto first = [&](const std::vector<Tensor>& in) {
    // gradcheck's finite-difference calls run with grad mode off: first-order gradients need it.
    AutoGradMode grad_on(true);
    std::vector<Tensor> x;
    for (std::size_t i = 0; i + 1 < in.size(); ++i)
      x.push_back(in[i].requires_grad() ? in[i] : in[i].detach().requires_grad_());
    return grad({f(x)}, x, {in.back()}, {.retain_graph = true, .create_graph = true});
  };
  GradcheckResult r = gradcheck(first, inputs, {.atol = 1e-5, .rtol = 1e-3});
  EXPECT_TRUE(r.ok) << r.message;
}

TEST(DoubleBackward, MatmulAndLinear) {
  check_second_order([](const auto& x) { return sq(matmul(x[0], x[1])); },
                     {f64({2, 3, 4}, 1), f64({4, 2}, 2)}, f64({2, 3, 2}, 3));
  check_second_order([](const auto& x) { return sq(linear(x[0], x[1], x[2])); },
                     {f64({3, 4}, 4), f64({2, 4}, 5), f64({2}, 6)}, f64({3, 2}, 7));
}

TEST(DoubleBackward, Convolutions) {
  check_second_order(
      [](const auto& x) {
        return sq(conv2d(x[0], x[1], x[2], {.stride = {2, 1}, .padding = 1, .groups = 2}));
      },
      {f64({1, 4, 5, 4}, 8), f64({2, 2, 3, 2}, 9), f64({2}, 10)}, f64({1, 2, 3, 5}, 11));
  check_second_order(
      [](const auto& x) {
        return sq(
            conv_transpose2d(x[0], x[1], {}, {.stride = 2, .padding = 1, .output_padding = 1}));
      },
      {f64({1, 2, 3, 3}, 12), f64({2, 3, 3, 3}, 13)}, f64({1, 3, 6, 6}, 14));
}

TEST(DoubleBackward, Pooling) {
  check_second_order(
      [](const auto& x) {
        return max_pool2d(x[0] * x[0], {.kernel = 3, .stride = 2, .padding = 1, .ceil_mode = true});
      },
      {f64({1, 2, 5, 6}, 15)}, f64({1, 2, 3, 4}, 16));
  check_second_order(
      [](const auto& x) {
        return avg_pool2d(x[0] * x[0],
                          {.kernel = 3, .stride = 2, .padding = 1, .count_include_pad = false}) +
               adaptive_avg_pool2d(x[0] * x[0], {3, 3}).narrow(2, 0, 3).narrow(3, 0, 3);
      },
      {f64({1, 2, 5, 6}, 17)}, f64({1, 2, 3, 3}, 18));
}

// prod and cumprod choose their gradient formula per group from the data inside the graph (no
// host read): second derivatives work wherever the input has no zero, including groups of a
// tensor that has zeros elsewhere; a second derivative that needs a zero group is refused.
TEST(DoubleBackward, ProdAndCumprodWithoutZeros) {
  check_second_order([](const auto& x) { return cumprod(sq(x[0]), 1); }, {f64({3, 4}, 19)},
                     f64({3, 4}, 20));
  check_second_order([](const auto& x) { return prod(sq(x[0]), {1}); }, {f64({3, 4}, 21)},
                     f64({3}, 22));
  check_second_order([](const auto& x) { return prod(x[0]); }, {f64({2, 3}, 23)}, f64({}, 24));
}

TEST(DoubleBackward, CumprodWithZerosOnlyWhereItIsNotNeeded) {
  // Row 1 has a zero. Its rows' first-order gradients are exact; the second derivative of row 0
  // alone is available, and asking for row 1's is NotImplementedError.
  Tensor x = from_vector<double>({0.5, 2.0, -1.5, 3.0, 0.0, 1.25}, {2, 3}).requires_grad_();
  Tensor g = grad({cumprod(x, 1).sum()}, {x}, {}, {.create_graph = true})[0];
  std::vector<double> expect = {1 + 2 - 1.5 * 2, 0.5 + 0.5 * -1.5, 0.5 * 2,  // row 0
                                1 + 0 + 0,       3 + 3 * 1.25,     0};       // row 1: exact
  std::vector<double> got = g.to_vector<double>();
  for (std::size_t i = 0; i < expect.size(); ++i) EXPECT_DOUBLE_EQ(got[i], expect[i]) << i;
  std::vector<Tensor> row0 =
      grad({g.select(0, 0).sum()}, {x}, {}, {.retain_graph = true}, /*allow_unused=*/true);
  // G = sum of row 0's gradient = 1 + b + bc + a + ac + ab for row 0 = (a, b, c): dG/dx is
  // (1 + b + c, 1 + a + c, a + b) there, and zero on row 1.
  std::vector<double> expect2 = {1 + 2.0 - 1.5, 1 + 0.5 - 1.5, 0.5 + 2.0, 0, 0, 0};
  std::vector<double> got2 = row0[0].to_vector<double>();
  for (std::size_t i = 0; i < expect2.size(); ++i) EXPECT_DOUBLE_EQ(got2[i], expect2[i]) << i;
  EXPECT_THROW(grad({g.select(0, 1).sum()}, {x}), NotImplementedError);
}

}  // namespace
}  // namespace ath
