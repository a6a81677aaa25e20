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

}  // namespace
}  // namespace ath
