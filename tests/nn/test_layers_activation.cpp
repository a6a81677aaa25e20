// The activation modules, Flatten/Unflatten/Identity and Bilinear: PyTorch goldens, reprs and bad
// options.
#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "athanor/athanor.h"
#include "athanor/nn/activation.h"
#include "athanor/nn/bilinear.h"
#include "athanor/nn/flatten.h"
#include "athanor/nn/identity.h"
#include "layers_nn_golden.h"
#include "support/module_golden.h"

namespace ath::nn {
namespace {

using testing::check_module_golden;
using testing::expect_error_naming;
using testing::layers_nn_case;

TEST(Activations, MatchPyTorchWithReprs) {
  // The golden modules: LeakyReLU(0.2), ELU(0.7), Softplus(beta=2, threshold=3),
  // Hardtanh(-2, 1.5), Softmax(dim=0), LogSoftmax(dim=1), the rest with defaults.
  std::map<std::string, std::function<std::shared_ptr<Module>()>> make{
      {"relu", [] { return std::make_shared<ReLU>(); }},
      {"leaky_relu", [] { return std::make_shared<LeakyReLU>(LeakyReLUOptions{0.2}); }},
      {"elu", [] { return std::make_shared<ELU>(ELUOptions{.alpha = 0.7}); }},
      {"selu", [] { return std::make_shared<SELU>(); }},
      {"gelu", [] { return std::make_shared<GELU>(); }},
      {"gelu_tanh",
       [] { return std::make_shared<GELU>(GELUOptions{.approximate = GeluApprox::Tanh}); }},
      {"silu", [] { return std::make_shared<SiLU>(); }},
      {"mish", [] { return std::make_shared<Mish>(); }},
      {"softplus",
       [] { return std::make_shared<Softplus>(SoftplusOptions{.beta = 2, .threshold = 3}); }},
      {"hardtanh",
       [] { return std::make_shared<Hardtanh>(HardtanhOptions{.min_val = -2, .max_val = 1.5}); }},
      {"hardsigmoid", [] { return std::make_shared<Hardsigmoid>(); }},
      {"hardswish", [] { return std::make_shared<Hardswish>(); }},
      {"sigmoid", [] { return std::make_shared<Sigmoid>(); }},
      {"tanh", [] { return std::make_shared<Tanh>(); }},
      {"softmax", [] { return std::make_shared<Softmax>(SoftmaxOptions{.dim = 0}); }},
      {"log_softmax", [] { return std::make_shared<LogSoftmax>(SoftmaxOptions{.dim = 1}); }},
  };
  EXPECT_EQ(make.size(), 16u);
  for (auto& [name, factory] : make) {
    const auto& c = layers_nn_case("act_" + name);
    auto m = factory();
    check_module_golden(c, *m);
    EXPECT_EQ(m->to_string(), c.attrs["repr"].get<std::string>()) << name;
    EXPECT_TRUE(m->state_dict().empty()) << name;
  }
}

TEST(Activations, DefaultsAndOptions) {
  EXPECT_EQ(LeakyReLU().to_string(), "LeakyReLU(negative_slope=0.01)");
  EXPECT_EQ(ELU().to_string(), "ELU(alpha=1.0)");
  EXPECT_EQ(Softplus().to_string(), "Softplus(beta=1, threshold=20)");
  EXPECT_EQ(Hardtanh().to_string(), "Hardtanh(min_val=-1.0, max_val=1.0)");
  EXPECT_EQ(Softmax().to_string(), "Softmax(dim=None)");
  // PyTorch's implicit softmax dim: 1 for a 2-D input, 0 for 1-D and 3-D.
  Tensor x = randn({3, 4});
  testing::expect_close(Softmax()(x), softmax(x, 1), 0, 0, "implicit dim");
  Tensor x3 = randn({2, 3, 4});
  testing::expect_close(LogSoftmax()(x3), log_softmax(x3, 0), 0, 0, "implicit dim 3-D");
  expect_error_naming<ValueError>([] { Hardtanh({.min_val = 1, .max_val = 1}); }, "Hardtanh");
  // Activations keep the dtype and work on 0-size tensors.
  EXPECT_EQ(GELU()(zeros({0, 3}, kFloat64)).shape(), Shape({0, 3}));
  EXPECT_EQ(SiLU()(ones({2}, kFloat64)).dtype(), kFloat64);
}

TEST(Flatten, MatchesPyTorch) {
  Flatten f({.start_dim = 1, .end_dim = 2});
  check_module_golden(layers_nn_case("flatten"), f);
  Flatten d;
  check_module_golden(layers_nn_case("flatten_default"), d);
  Unflatten u({.dim = 1, .sizes = {2, 6}});
  check_module_golden(layers_nn_case("unflatten"), u);
  Identity id;
  check_module_golden(layers_nn_case("identity"), id);
  Tensor x = randn({2, 3});
  EXPECT_TRUE(id(x).is_same(x));
  EXPECT_EQ(Unflatten({.dim = -1, .sizes = {-1, 2}})(zeros({3, 8})).shape(), Shape({3, 4, 2}));
  expect_error_naming<ValueError>([] { Unflatten({.dim = 1, .sizes = {}}); }, "Unflatten");
  expect_error_naming<ValueError>([] { Unflatten({.dim = 1, .sizes = {-1, -1}}); }, "Unflatten");
  EXPECT_THROW(u(zeros({3, 10})), ShapeError);
  EXPECT_THROW(f(zeros({4})), IndexError);
}

TEST(Bilinear, MatchesPyTorch) {
  Bilinear b({.in1 = 3, .in2 = 4, .out = 5});
  auto run = [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{b(in[0], in[1])}; };
  check_module_golden(layers_nn_case("bilinear"), b, run);
  Bilinear nb({.in1 = 2, .in2 = 3, .out = 4, .bias = false});
  EXPECT_EQ(nb.state_dict().keys(), std::vector<std::string>{"weight"});
  check_module_golden(layers_nn_case("bilinear_nobias_3d"), nb, [&](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{nb.forward(in[0], in[1])};
  });
}

TEST(Bilinear, InitBadInputAndRepr) {
  manual_seed(11);
  Bilinear b({.in1 = 16, .in2 = 30, .out = 20});
  EXPECT_EQ(b.weight.shape(), Shape({20, 16, 30}));
  EXPECT_LE(max(b.weight.abs()).item<double>(), 0.25);  // 1 / sqrt(in1)
  EXPECT_GT(max(b.weight.abs()).item<double>(), 0.24);
  EXPECT_LE(max(b.bias.abs()).item<double>(), 0.25);
  expect_error_naming<ValueError>([&] { b(randn({2, 16})); }, "Bilinear");
  expect_error_naming<ShapeError>([&] { b(randn({2, 16}), randn({2, 29})); }, "Bilinear");
  expect_error_naming<ShapeError>([&] { b(randn({2, 16}), randn({3, 30})); }, "Bilinear");
  expect_error_naming<ShapeError>([&] { b(randn({2, 16}), randn({2, 1, 30})); }, "Bilinear");
  expect_error_naming<ValueError>([] { Bilinear({.in1 = -2, .in2 = 3, .out = 1}); }, "Bilinear");
  EXPECT_EQ(b(zeros({0, 16}), zeros({0, 30})).shape(), Shape({0, 20}));
  const auto& want = layers_nn_case("reprs").attrs["reprs"];
  EXPECT_EQ(Bilinear({.in1 = 3, .in2 = 4, .out = 5}).to_string(), want[10].get<std::string>());
  EXPECT_EQ(Flatten().to_string(), want[11].get<std::string>());
  EXPECT_EQ(Unflatten({.dim = 1, .sizes = {2, 6}}).to_string(), want[12].get<std::string>());
  EXPECT_EQ(Identity().to_string(), want[13].get<std::string>());
}

}  // namespace
}  // namespace ath::nn
