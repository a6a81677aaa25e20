// ModuleList and ModuleDict (PyTorch's child names), and a small CNN built from every container
// whose state_dict keys, printout and forward/backward match PyTorch's twin (golden small_cnn).
#include <gtest/gtest.h>

#include "athanor/athanor.h"
#include "athanor/nn/nn.h"
#include "layers_nn_golden.h"
#include "support/module_golden.h"

namespace ath::nn {
namespace {

using testing::check_module_golden;
using testing::layers_nn_case;

std::vector<std::string> child_names(const Module& m) {
  std::vector<std::string> out;
  for (auto& [name, child] : m.named_children()) out.push_back(name);
  return out;
}

TEST(ModuleList, NamesByIndexAndIterates) {
  ModuleList list(std::make_shared<Linear>(LinearOptions{.in = 2, .out = 3}),
                  std::make_shared<ReLU>());
  auto& last = list.emplace_back<Linear>(LinearOptions{.in = 3, .out = 1});
  EXPECT_EQ(list.size(), 3u);
  EXPECT_EQ(child_names(list), (std::vector<std::string>{"0", "1", "2"}));
  EXPECT_EQ(list.state_dict().keys(),
            (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  EXPECT_EQ(&list[-1], &last);
  EXPECT_EQ(&list.at<Linear>(2), &last);
  EXPECT_EQ(list[1].type_name(), "ReLU");
  EXPECT_THROW(list[3], IndexError);
  EXPECT_THROW(list[-4], IndexError);
  EXPECT_THROW(list.at<Linear>(1), ValueError);
  EXPECT_THROW(list.push_back(nullptr), ValueError);
  Tensor h = ones({4, 2});
  for (const auto& m : list) h = (*m)(h);
  EXPECT_EQ(h.shape(), Shape({4, 1}));
  EXPECT_THROW(list(h), ValueError);  // no forward of its own
  ModuleList more;
  more.push_back(std::make_shared<Identity>());
  more.extend(list);
  EXPECT_EQ(child_names(more), (std::vector<std::string>{"0", "1", "2", "3"}));
  EXPECT_EQ(&more[3], &last);  // shared, not copied
  EXPECT_THROW(more.extend(more), ValueError);
  EXPECT_EQ(list.to_string(),
            "ModuleList(\n  (0): Linear(in_features=2, out_features=3, bias=True)\n  (1): ReLU()\n"
            "  (2): Linear(in_features=3, out_features=1, bias=True)\n)");
}

TEST(ModuleDict, KeepsInsertionOrderAndNamesByKey) {
  ModuleDict heads;
  heads.emplace<Linear>("zeta", LinearOptions{.in = 4, .out = 2});
  heads.insert("alpha", std::make_shared<Linear>(LinearOptions{.in = 4, .out = 3, .bias = false}));
  EXPECT_EQ(heads.keys(), (std::vector<std::string>{"zeta", "alpha"}));
  EXPECT_EQ(child_names(heads), heads.keys());
  EXPECT_EQ(heads.state_dict().keys(),
            (std::vector<std::string>{"zeta.weight", "zeta.bias", "alpha.weight"}));
  EXPECT_TRUE(heads.contains("alpha"));
  EXPECT_FALSE(heads.contains("beta"));
  EXPECT_EQ(heads.at<Linear>("alpha").options.out, 3);
  EXPECT_EQ(heads["zeta"](ones({1, 4})).shape(), Shape({1, 2}));
  EXPECT_THROW(heads["beta"], KeyError);
  EXPECT_THROW(heads.insert("zeta", std::make_shared<ReLU>()), ValueError);
  EXPECT_THROW(heads.insert("a.b", std::make_shared<ReLU>()), ValueError);
  EXPECT_THROW(heads.insert("", std::make_shared<ReLU>()), ValueError);
  EXPECT_THROW(heads.insert("c", nullptr), ValueError);
  EXPECT_EQ(heads.size(), 2u);  // failed inserts add nothing
  std::vector<std::string> seen;
  for (const auto& [key, m] : heads) seen.push_back(key + ":" + m->type_name());
  EXPECT_EQ(seen, (std::vector<std::string>{"zeta:Linear", "alpha:Linear"}));
  ModuleDict built({{"b", std::make_shared<ReLU>()}, {"a", std::make_shared<Tanh>()}});
  EXPECT_EQ(built.keys(), (std::vector<std::string>{"b", "a"}));
}

// PyTorch's SmallCNN of tools/golden/layers_nn.py, attribute for attribute.
struct SmallCNN : Module {
  Sequential features;
  ModuleList blocks;
  ModuleDict heads;
  Flatten flatten;

  SmallCNN() : Module("SmallCNN") {
    features.emplace_back<Conv2d>(Conv2dOptions{.in = 1, .out = 4, .kernel = 3, .padding = 1});
    features.emplace_back<BatchNorm2d>(BatchNormOptions{.features = 4});
    features.emplace_back<ReLU>();
    features.emplace_back<MaxPool2d>(MaxPool2dOptions{.kernel = 2});
    blocks.emplace_back<Conv2d>(
        Conv2dOptions{.in = 4, .out = 4, .kernel = 3, .padding = 1, .groups = 2});
    blocks.emplace_back<GroupNorm>(GroupNormOptions{.groups = 2, .channels = 4});
    heads.emplace<Linear>("cls", LinearOptions{.in = 16, .out = 3});
    heads.emplace<Linear>("aux", LinearOptions{.in = 16, .out = 2});
    register_module("features", features);
    register_module("blocks", blocks);
    register_module("heads", heads);
    register_module("flatten", flatten);
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = features(x);
    for (const auto& b : blocks) h = (*b)(h);
    h = adaptive_avg_pool2d(h, 2);
    return heads["cls"](flatten(h));
  }
};

TEST(Containers, SmallCnnMatchesPyTorchKeysReprAndValues) {
  const auto& c = layers_nn_case("small_cnn");
  SmallCNN net;
  std::vector<std::string> want;
  for (const auto& k : c.attrs["keys"]) want.push_back(k.get<std::string>());
  EXPECT_EQ(net.state_dict().keys(), want);
  EXPECT_EQ(net.to_string(), c.attrs["repr"].get<std::string>());
  check_module_golden(c, net, {}, {.rtol = 1e-4, .atol = 1e-4});  // train mode: BN stats too
  EXPECT_EQ(net.parameter("heads.cls.weight").shape(), Shape({3, 16}));
}

}  // namespace
}  // namespace ath::nn
