// Conv1d, Conv2d, ConvTranspose2d and the pooling layers: PyTorch goldens (same weights in, same
// outputs and gradients out), PyTorch's default initialisation bounds, reprs and bad options.
#include <gtest/gtest.h>

#include <cmath>

#include "athanor/athanor.h"
#include "athanor/nn/conv.h"
#include "athanor/nn/pooling.h"
#include "layers_nn_golden.h"
#include "support/module_golden.h"

namespace ath::nn {
namespace {

using testing::check_module_golden;
using testing::expect_error_naming;
using testing::layers_nn_case;

TEST(Conv1d, MatchesPyTorch) {
  Conv1d a({.in = 4, .out = 6, .kernel = 3, .stride = 2, .padding = 1, .dilation = 2, .groups = 2});
  EXPECT_EQ(a.weight.shape(), Shape({6, 2, 3}));
  check_module_golden(layers_nn_case("conv1d"), a);
  Conv1d b({.in = 3, .out = 4, .kernel = 4, .padding = "same", .bias = false});
  EXPECT_EQ(b.state_dict().keys(), std::vector<std::string>{"weight"});
  check_module_golden(layers_nn_case("conv1d_same_nobias"), b);
}

TEST(Conv2d, MatchesPyTorch) {
  Conv2d a({.in = 4,
            .out = 6,
            .kernel = {3, 2},
            .stride = {2, 1},
            .padding = {1, 2},
            .dilation = {2, 1},
            .groups = 2});
  EXPECT_EQ(a.weight.shape(), Shape({6, 2, 3, 2}));
  check_module_golden(layers_nn_case("conv2d_groups_dilation_stride"), a);
  Conv2d same(
      {.in = 4, .out = 8, .kernel = {3, 4}, .padding = "same", .dilation = {2, 1}, .groups = 4});
  check_module_golden(layers_nn_case("conv2d_same_groups"), same);
  Conv2d valid({.in = 3, .out = 2, .kernel = 3, .padding = "valid", .bias = false});
  check_module_golden(layers_nn_case("conv2d_valid_nobias"), valid);
  Conv2d unbatched({.in = 2, .out = 3, .kernel = 2, .stride = 2});
  check_module_golden(layers_nn_case("conv2d_unbatched"), unbatched);
}

TEST(ConvTranspose2d, MatchesPyTorch) {
  ConvTranspose2d a({.in = 4,
                     .out = 6,
                     .kernel = 3,
                     .stride = 2,
                     .padding = 1,
                     .output_padding = 1,
                     .groups = 2});
  EXPECT_EQ(a.weight.shape(), Shape({4, 3, 3, 3}));
  check_module_golden(layers_nn_case("conv_transpose2d_groups"), a);
  ConvTranspose2d b({.in = 2,
                     .out = 3,
                     .kernel = {2, 3},
                     .stride = {3, 2},
                     .padding = {1, 0},
                     .output_padding = {2, 1},
                     .bias = false,
                     .dilation = {1, 2}});
  check_module_golden(layers_nn_case("conv_transpose2d_dilation"), b);
}

TEST(ConvTranspose2d, OutputSizePicksOutputPadding) {
  ConvTranspose2d ct({.in = 3, .out = 2, .kernel = 3, .stride = 2, .padding = 1});
  check_module_golden(layers_nn_case("conv_transpose2d_output_size"), ct,
                      [&](const std::vector<Tensor>& in) {
                        return std::vector<Tensor>{ct.forward(in[0], Shape{8, 8})};
                      });
  Tensor x = randn({1, 3, 4, 4});
  EXPECT_EQ(ct(x).shape(), Shape({1, 2, 7, 7}));
  EXPECT_EQ(ct.forward(x, Shape{1, 2, 7, 8}).shape(), Shape({1, 2, 7, 8}));  // full shape
  expect_error_naming<ValueError>([&] { ct.forward(x, Shape{9, 8}); }, "ConvTranspose2d");
  expect_error_naming<ValueError>([&] { ct.forward(x, Shape{6, 8}); }, "ConvTranspose2d");
  expect_error_naming<ValueError>([&] { ct.forward(x, Shape{8}); }, "ConvTranspose2d");
}

// kaiming_uniform_(a = sqrt(5)) on a conv weight is U(-1/sqrt(fan_in), 1/sqrt(fan_in)), and the
// bias uses the same bound (fan_in = in / groups * kh * kw; for the transposed weight
// [in, out / groups, kh, kw] it is out / groups * kh * kw).
void expect_uniform_bound(const Tensor& t, double bound) {
  const double m = max(t.abs()).item<double>();
  EXPECT_LE(m, bound);
  EXPECT_GT(m, 0.9 * bound);
  EXPECT_NEAR(t.pow(2).mean().item<double>(), bound * bound / 3, 0.1 * bound * bound);
}

TEST(Conv2d, DefaultInitIsPyTorchsBound) {
  manual_seed(5);
  Conv2d c({.in = 32, .out = 64, .kernel = 3, .groups = 2});
  expect_uniform_bound(c.weight, 1 / std::sqrt(16.0 * 9));
  expect_uniform_bound(c.bias, 1 / std::sqrt(16.0 * 9));
  Conv1d c1({.in = 8, .out = 300, .kernel = 5});
  expect_uniform_bound(c1.weight, 1 / std::sqrt(40.0));
  ConvTranspose2d t({.in = 64, .out = 24, .kernel = 2, .groups = 2});
  expect_uniform_bound(t.weight, 1 / std::sqrt(12.0 * 4));
  expect_uniform_bound(t.bias, 1 / std::sqrt(12.0 * 4));
  EXPECT_TRUE(c.weight.requires_grad());
  EXPECT_EQ(c.state_dict().keys(), (std::vector<std::string>{"weight", "bias"}));
}

TEST(Conv2d, BadOptionsNameTheLayer) {
  expect_error_naming<ValueError>([] { Conv2d({.in = 3, .out = 4, .kernel = 3, .groups = 2}); },
                                  "Conv2d");
  expect_error_naming<ValueError>([] { Conv2d({.in = 4, .out = 3, .kernel = 3, .groups = 2}); },
                                  "Conv2d");
  expect_error_naming<ValueError>([] { Conv2d({.in = 4, .out = 4, .kernel = 3, .groups = 0}); },
                                  "Conv2d");
  expect_error_naming<ValueError>([] { Conv2d({.in = -1, .out = 4, .kernel = 3}); }, "Conv2d");
  expect_error_naming<ValueError>([] { Conv2d({.in = 1, .out = 4, .kernel = 0}); }, "Conv2d");
  expect_error_naming<ValueError>([] { Conv2d({.in = 1, .out = 4, .kernel = 3, .stride = 0}); },
                                  "Conv2d");
  expect_error_naming<ValueError>([] { Conv2d({.in = 1, .out = 4, .kernel = 3, .padding = -1}); },
                                  "Conv2d");
  expect_error_naming<ValueError>(
      [] { Conv2d({.in = 1, .out = 4, .kernel = 3, .padding = "full"}); }, "Conv2d");
  expect_error_naming<ValueError>(
      [] { Conv2d({.in = 1, .out = 4, .kernel = 3, .stride = 2, .padding = "same"}); }, "Conv2d");
  expect_error_naming<NotImplementedError>(
      [] { Conv2d({.in = 1, .out = 4, .kernel = 3, .padding_mode = "reflect"}); }, "Conv2d");
  expect_error_naming<ValueError>(
      [] { Conv2d({.in = 1, .out = 4, .kernel = 3, .padding_mode = "mirror"}); }, "Conv2d");
  expect_error_naming<ValueError>([] { Conv1d({.in = 3, .out = 4, .kernel = 3, .groups = 2}); },
                                  "Conv1d");
  expect_error_naming<ValueError>(
      [] {
        Conv1d({.in = 3, .out = 4, .kernel = 3, .padding = {1, 2}});
      },
      "Conv1d");
  expect_error_naming<ValueError>(
      [] { ConvTranspose2d({.in = 4, .out = 6, .kernel = 3, .output_padding = 1}); },
      "ConvTranspose2d");
  expect_error_naming<ValueError>(
      [] { ConvTranspose2d({.in = 4, .out = 6, .kernel = 3, .groups = 4}); }, "ConvTranspose2d");
  expect_error_naming<ValueError>(
      [] { ConvTranspose2d({.in = 4, .out = 6, .kernel = 3, .padding_mode = "circular"}); },
      "ConvTranspose2d");
  // Bad input is the op's error, naming the op.
  Conv2d c({.in = 3, .out = 4, .kernel = 3});
  expect_error_naming<ShapeError>([&] { c(zeros({1, 2, 5, 5})); }, "conv");
}

TEST(Pooling, MatchesPyTorch) {
  MaxPool2d m({.kernel = 2});
  check_module_golden(layers_nn_case("max_pool2d_default"), m);
  MaxPool2d ceil({.kernel = 3, .stride = 2, .padding = 1, .ceil_mode = true});
  check_module_golden(layers_nn_case("max_pool2d_ceil"), ceil);
  MaxPool2d dil({.kernel = {2, 3}, .stride = {1, 2}, .padding = 1, .dilation = {2, 1}});
  check_module_golden(layers_nn_case("max_pool2d_dilation"), dil);
  AvgPool2d excl(
      {.kernel = 3, .stride = 2, .padding = 1, .ceil_mode = true, .count_include_pad = false});
  check_module_golden(layers_nn_case("avg_pool2d_ceil_exclude_pad"), excl);
  AvgPool2d incl({.kernel = 2, .padding = 1, .ceil_mode = true});
  check_module_golden(layers_nn_case("avg_pool2d_ceil_include_pad"), incl);
  AvgPool2d div({.kernel = {3, 2}, .stride = 1, .divisor_override = 4});
  check_module_golden(layers_nn_case("avg_pool2d_divisor"), div);
  AdaptiveAvgPool2d ada({.output_size = {3, 2}});
  check_module_golden(layers_nn_case("adaptive_avg_pool2d"), ada);
  AdaptiveAvgPool2d gap({.output_size = 1});
  check_module_golden(layers_nn_case("adaptive_avg_pool2d_1"), gap);
  EXPECT_TRUE(m.state_dict().empty());
}

TEST(Pooling, BadOptionsNameTheLayer) {
  expect_error_naming<ValueError>([] { MaxPool2d({.kernel = 0}); }, "MaxPool2d");
  expect_error_naming<ValueError>([] { MaxPool2d({.kernel = 2, .stride = -1}); }, "MaxPool2d");
  expect_error_naming<ValueError>([] { MaxPool2d({.kernel = 2, .padding = 2}); }, "MaxPool2d");
  expect_error_naming<ValueError>([] { MaxPool2d({.kernel = 2, .dilation = 0}); }, "MaxPool2d");
  expect_error_naming<ValueError>([] { AvgPool2d({.kernel = {2, -2}}); }, "AvgPool2d");
  expect_error_naming<ValueError>([] { AvgPool2d({.kernel = 2, .divisor_override = 0}); },
                                  "AvgPool2d");
  expect_error_naming<ValueError>(
      [] {
        AdaptiveAvgPool2d({.output_size = {0, 2}});
      },
      "AdaptiveAvgPool2d");
  MaxPool2d m({.kernel = 2});
  EXPECT_THROW(m(zeros({2, 3})), ShapeError);
}

// The reprs of configured layers, as PyTorch prints them (golden "reprs", entries 0 to 6).
TEST(ConvAndPooling, ReprsMatchPyTorch) {
  const auto& want = layers_nn_case("reprs").attrs["reprs"];
  std::vector<std::shared_ptr<Module>> layers{
      std::make_shared<Conv1d>(Conv1dOptions{
          .in = 4, .out = 6, .kernel = 3, .stride = 2, .padding = 1, .dilation = 2, .groups = 2}),
      std::make_shared<Conv2d>(Conv2dOptions{.in = 1, .out = 32, .kernel = 3, .padding = 1}),
      std::make_shared<Conv2d>(Conv2dOptions{.in = 4,
                                             .out = 8,
                                             .kernel = {3, 4},
                                             .padding = "same",
                                             .dilation = {1, 2},
                                             .groups = 4,
                                             .bias = false}),
      std::make_shared<ConvTranspose2d>(ConvTranspose2dOptions{.in = 4,
                                                               .out = 6,
                                                               .kernel = 3,
                                                               .stride = 2,
                                                               .padding = 1,
                                                               .output_padding = 1,
                                                               .groups = 2}),
      std::make_shared<MaxPool2d>(
          MaxPool2dOptions{.kernel = 3, .stride = 2, .padding = 1, .ceil_mode = true}),
      std::make_shared<AvgPool2d>(AvgPool2dOptions{.kernel = 3, .stride = 2, .padding = 1}),
      std::make_shared<AdaptiveAvgPool2d>(AdaptiveAvgPool2dOptions{.output_size = {3, 2}}),
  };
  for (std::size_t i = 0; i < layers.size(); ++i) {
    EXPECT_EQ(layers[i]->to_string(), want[i].get<std::string>());
  }
  EXPECT_EQ(Conv2d({.in = 1, .out = 2, .kernel = 3, .padding = "valid"}).extra_repr(),
            "1, 2, kernel_size=(3, 3), stride=(1, 1), padding=valid");
  EXPECT_EQ(MaxPool2d({.kernel = {2, 3}}).extra_repr(),
            "kernel_size=(2, 3), stride=(2, 3), padding=0, dilation=1, ceil_mode=False");
}

TEST(Conv2d, ToFloat64AndBFloat16) {
  Conv2d c({.in = 2, .out = 3, .kernel = 3, .padding = 1});
  Tensor x = randn({1, 2, 5, 5});
  Tensor y32 = c(x);
  c.to(kFloat64);
  Tensor y64 = c(x.to(kFloat64));
  EXPECT_EQ(y64.dtype(), kFloat64);
  testing::expect_close(y64, y32.to(kFloat64), 1e-5, 1e-5, "float64 conv");
  Conv2d b({.in = 2, .out = 3, .kernel = 3, .dtype = kBFloat16});
  EXPECT_EQ(b(x.to(kBFloat16)).dtype(), kBFloat16);
}

}  // namespace
}  // namespace ath::nn
