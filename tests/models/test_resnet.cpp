// models::ResNet: torchvision's key names and parameter counts (resnet18/34), PyTorch goldens
// for tiny ResNets with both stems (outputs, input and parameter gradients, running stats), and
// a small-input ResNet training step on Fashion-MNIST-shaped input.
#include <gtest/gtest.h>

#include "athanor/athanor.h"
#include "athanor/models/resnet.h"
#include "support/module_golden.h"

namespace ath::models {
namespace {

using testing::check_module_golden;
using testing::GoldenCase;
using testing::load_golden;

const GoldenCase& golden(const std::string& name) {
  static const std::vector<GoldenCase> cases = load_golden("resnet");
  for (const auto& c : cases) {
    if (c.name == name) return c;
  }
  throw KeyError("no golden case " + name);
}

ResNetOptions options_from(const nlohmann::json& a) {
  ResNetOptions o;
  for (int i = 0; i < 4; ++i) o.layers[i] = a["layers"][i].get<int64_t>();
  o.num_classes = a["num_classes"].get<int64_t>();
  o.in_channels = a["in_channels"].get<int64_t>();
  o.width = a["width"].get<int64_t>();
  o.small_input = a["small_input"].get<bool>();
  return o;
}

TEST(ResNet, Resnet18KeysAndCountAreTorchvisions) {
  ResNet net(resnet18_options());
  const auto& attrs = golden("resnet18_keys").attrs;
  EXPECT_EQ(net.num_parameters(), 11689512);
  EXPECT_EQ(net.num_parameters(), attrs["num_parameters"].get<int64_t>());
  EXPECT_EQ(net.state_dict().keys(), attrs["state_keys"].get<std::vector<std::string>>());
  std::vector<std::string> params;
  for (auto& [name, t] : net.named_parameters()) params.push_back(name);
  EXPECT_EQ(params, attrs["param_keys"].get<std::vector<std::string>>());
  // A few spot checks that do not depend on the golden file.
  EXPECT_EQ(net.parameter("layer2.0.downsample.0.weight").shape(), Shape({128, 64, 1, 1}));
  EXPECT_EQ(net.parameter("fc.weight").shape(), Shape({1000, 512}));
  EXPECT_EQ(net.parameter("conv1.weight").shape(), Shape({64, 3, 7, 7}));
}

TEST(ResNet, Resnet34Count) {
  ResNet net(resnet34_options());
  EXPECT_EQ(net.num_parameters(), golden("resnet34_keys").attrs["num_parameters"].get<int64_t>());
  EXPECT_EQ(net.num_parameters(), 21797672);
}

TEST(ResNet, MatchesPyTorchSmallInput) {
  const GoldenCase& c = golden("tiny_small_input");
  ResNet net(options_from(c.attrs));
  check_module_golden(c, net);
}

TEST(ResNet, MatchesPyTorchImagenetStem) {
  const GoldenCase& c = golden("tiny_imagenet_stem");
  ResNet net(options_from(c.attrs));
  check_module_golden(c, net);
}

TEST(ResNet, SmallInputTrainsOnFashionShapes) {
  manual_seed(0);
  ResNet net({.layers = {1, 1, 1, 1},
              .num_classes = 10,
              .in_channels = 1,
              .width = 8,
              .small_input = true});
  Tensor x = randn({2, 1, 28, 28});
  Tensor y = net(x);
  ASSERT_EQ(y.shape(), Shape({2, 10}));
  y.pow(2).mean().backward();
  for (auto& [name, p] : net.named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name;
  }
  EXPECT_NE(net.to_string().find("small_input=True"), std::string::npos) << net.to_string();
}

TEST(ResNet, BadOptions) {
  EXPECT_THROW(ResNet({.layers = {2, 0, 2, 2}}), ValueError);
  EXPECT_THROW(ResNet({.width = 0}), ValueError);
}

}  // namespace
}  // namespace ath::models
