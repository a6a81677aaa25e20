#include <gtest/gtest.h>

#include "athanor/athanor.h"
#include "athanor/nn/module.h"

namespace ath::nn {
namespace {

// A minimal layer: one weight, one optional bias, one running buffer.
struct Affine : Module {
  Tensor weight, bias, running;
  explicit Affine(int64_t n, bool with_bias = true) : Module("Affine") {
    weight = register_parameter("weight", ones({n}));
    bias = register_parameter("bias", with_bias ? zeros({n}) : Tensor());
    running = register_buffer("running", zeros({n}));
    register_buffer("scratch", zeros({1}), /*persistent=*/false);
  }
  Tensor forward(const Tensor& x) override {
    return x * weight + (bias.defined() ? bias : weight * 0.0);
  }
};

struct Net : Module {
  Affine a{3}, b{3, false};
  std::shared_ptr<Affine> c;
  Net() : Module("Net") {
    register_module("a", a);
    register_module("b", b);
    c = register_module("c", std::make_shared<Affine>(2));
  }
  Tensor forward(const Tensor& x) override { return b(a(x)); }
};

TEST(Module, DottedNamesInPyTorchOrder) {
  Net net;
  std::vector<std::string> names;
  for (auto& [n, t] : net.named_parameters()) names.push_back(n);
  EXPECT_EQ(names,
            (std::vector<std::string>{"a.weight", "a.bias", "b.weight", "c.weight", "c.bias"}));
  EXPECT_EQ(net.state_dict().keys(),
            (std::vector<std::string>{"a.weight", "a.bias", "a.running", "b.weight", "b.running",
                                      "c.weight", "c.bias", "c.running"}));
  EXPECT_EQ(net.named_buffers().size(), 6u);  // non-persistent scratch included
  EXPECT_EQ(net.num_parameters(), 3 + 3 + 3 + 2 + 2);
  std::vector<std::string> mods;
  for (auto& [n, m] : net.named_modules()) mods.push_back(n);
  EXPECT_EQ(mods, (std::vector<std::string>{"", "a", "b", "c"}));
}

TEST(Module, RejectsBadAndDuplicateNames) {
  Affine a(2);
  EXPECT_THROW(a.register_parameter("weight", ones({1})), ValueError);
  EXPECT_THROW(a.register_parameter("x.y", ones({1})), ValueError);
  EXPECT_THROW(a.register_parameter("ints", ones({1}, kInt64)), DTypeError);
}

TEST(Module, TrainEvalAndZeroGradRecurse) {
  Net net;
  net.eval();
  for (Module* m : net.modules()) EXPECT_FALSE(m->is_training());
  net.train();
  EXPECT_TRUE(net.c->is_training());
  net(ones({3})).sum().backward();
  EXPECT_TRUE(net.a.weight.grad().defined());
  net.zero_grad();
  EXPECT_FALSE(net.a.weight.grad().defined());
}

TEST(Module, LoadStateDictCopiesThroughHandles) {
  Net src, dst;
  src.a.weight.detach().fill_(2.0);
  src.c->running.fill_(5.0);
  dst.load_state_dict(src.state_dict());
  EXPECT_EQ(dst.a.weight.to_vector<float>(), (std::vector<float>{2, 2, 2}));
  EXPECT_EQ(dst.c->running.to_vector<float>(), (std::vector<float>{5, 5}));
  EXPECT_FALSE(dst.a.weight.shares_storage(src.a.weight));
}

TEST(Module, LoadStateDictListsEveryFaultAtOnce) {
  Net net;
  StateDict sd = net.state_dict();
  sd.erase("a.bias");
  sd.erase("c.running");
  sd.insert("extra.weight", ones({1}));
  sd.insert_or_assign("b.weight", ones({4}));
  Tensor before = net.a.weight.clone();
  try {
    net.load_state_dict(sd);
    FAIL() << "expected KeyError";
  } catch (const KeyError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("a.bias"), std::string::npos) << m;
    EXPECT_NE(m.find("c.running"), std::string::npos) << m;
    EXPECT_NE(m.find("extra.weight"), std::string::npos) << m;
    EXPECT_NE(m.find("b.weight (checkpoint [4], model [3])"), std::string::npos) << m;
  }
  // Nothing half-loaded.
  EXPECT_EQ(net.a.weight.to_vector<float>(), before.to_vector<float>());
  sd.insert_or_assign("b.weight", ones({3}));
  auto r = net.load_state_dict(sd, /*strict=*/false);
  EXPECT_EQ(r.missing_keys, (std::vector<std::string>{"a.bias", "c.running"}));
  EXPECT_EQ(r.unexpected_keys, (std::vector<std::string>{"extra.weight"}));
}

TEST(Module, ToDtypeKeepsHandlesAndRequiresGrad) {
  Net net;
  Tensor w = net.a.weight;
  net.to(kFloat64);
  EXPECT_EQ(w.dtype(), kFloat64);
  EXPECT_EQ(net.a.weight.dtype(), kFloat64);
  EXPECT_TRUE(w.requires_grad());
  EXPECT_EQ(net.c->running.dtype(), kFloat64);
  EXPECT_EQ(net(ones({3}, kFloat64)).dtype(), kFloat64);
}

TEST(Module, ForwardHooksAndPrinting) {
  Net net;
  int calls = 0;
  int64_t h = net.a.register_forward_hook([&](Module&, const Tensor&, const Tensor& out) {
    ++calls;
    EXPECT_EQ(out.shape(), Shape({3}));
  });
  net(ones({3}));
  net.a.remove_forward_hook(h);
  net(ones({3}));
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(net.to_string(), "Net(\n  (a): Affine()\n  (b): Affine()\n  (c): Affine()\n)");
  Module bare;
  EXPECT_THROW(bare(ones({1})), ValueError);
}

}  // namespace
}  // namespace ath::nn
