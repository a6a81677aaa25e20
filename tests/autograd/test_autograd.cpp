// The engine's rules: accumulation, retain_graph, leaves vs non-leaves, hooks, version counters,
// grad modes, higher-order gradients, anomaly mode.
#include <gtest/gtest.h>

#include "athanor/athanor.h"

namespace ath {
namespace {

Tensor vec(std::vector<double> v) { return from_vector(v); }
std::vector<double> vals(const Tensor& t) { return t.to_vector<double>(); }

TEST(Autograd, GradientsAccumulateAcrossBackwardCalls) {
  Tensor x = vec({1, 2}).requires_grad_();
  (x * x).sum().backward();
  (x * 3.0).sum().backward();
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{2 + 3, 4 + 3}));
}

TEST(Autograd, SharedSubgraphGetsSummedGradient) {
  Tensor x = vec({3}).requires_grad_();
  Tensor y = x * x;              // used twice below
  Tensor z = (y + y * x).sum();  // x^2 + x^3 -> 2x + 3x^2
  z.backward();
  EXPECT_DOUBLE_EQ(x.grad().item<double>(), 2 * 3 + 3 * 9);
}

TEST(Autograd, SecondBackwardNeedsRetainGraph) {
  Tensor x = vec({1, 2}).requires_grad_();
  Tensor y = (x * x).sum();
  y.backward({}, /*retain_graph=*/true);
  y.backward();
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{4, 8}));
  EXPECT_THROW(y.backward(), AutogradError);
}

TEST(Autograd, LeafAndNonLeafRules) {
  Tensor x = vec({1, 2}).requires_grad_();
  Tensor y = x * 2.0;
  EXPECT_TRUE(x.is_leaf());
  EXPECT_FALSE(y.is_leaf());
  EXPECT_NE(y.grad_fn(), nullptr);
  EXPECT_EQ(y.grad_fn()->name(), "mul");
  y.sum().backward();
  EXPECT_FALSE(y.grad().defined());  // non-leaf grads are not kept...
  Tensor a = vec({1, 2}).requires_grad_();
  Tensor b = a * 2.0;
  b.retain_grad();  // ...unless asked
  (b * b).sum().backward();
  EXPECT_EQ(vals(b.grad()), (std::vector<double>{4, 8}));
  EXPECT_THROW(vec({1}).to(kInt64).requires_grad_(), AutogradError);
  EXPECT_THROW(y.requires_grad_(false), AutogradError);
}

TEST(Autograd, NonScalarRootNeedsGradient) {
  Tensor x = vec({1, 2}).requires_grad_();
  Tensor y = x * 3.0;
  EXPECT_THROW(y.backward(), AutogradError);
  y.backward(vec({1, 10}));
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{3, 30}));
  EXPECT_THROW(vec({1}).backward(), AutogradError);  // no grad_fn, no requires_grad
}

TEST(Autograd, HooksSeeAndReplaceGradients) {
  Tensor x = vec({1, 2}).requires_grad_();
  std::vector<double> seen;
  x.register_hook([&](const Tensor& g) {
    seen = vals(g);
    return g * 10.0;  // replaces the gradient that is accumulated
  });
  Tensor y = x * 2.0;
  int64_t h = y.register_hook([](const Tensor& g) { return g + 1.0; });
  y.sum().backward();
  EXPECT_EQ(seen, (std::vector<double>{4, 4}));  // (1 + 1) * 2
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{40, 40}));
  y.remove_hook(h);
  EXPECT_THROW(vec({1}).register_hook([](const Tensor& g) { return g; }), AutogradError);
}

TEST(Autograd, InPlaceOnSavedTensorIsDetected) {
  Tensor x = vec({1, 2}).requires_grad_();
  Tensor y = x * 1.0;
  Tensor z = y * y;  // saves y
  {
    NoGradGuard g;
    y.mul_(2.0);  // bumps y's version
  }
  try {
    z.sum().backward();
    FAIL() << "expected an error";
  } catch (const AutogradError& e) {
    EXPECT_NE(std::string(e.what()).find("modified by an in-place operation"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("mul"), std::string::npos) << e.what();
  }
}

TEST(Autograd, InPlaceRules) {
  Tensor leaf = vec({1, 2}).requires_grad_();
  EXPECT_THROW(leaf.add_(vec({1, 1})), AutogradError);
  {
    NoGradGuard g;
    leaf.add_(vec({1, 1}));  // allowed without grad: the optimizer's update
  }
  EXPECT_EQ(vals(leaf), (std::vector<double>{2, 3}));
  // In-place on a non-leaf rebases its history: d/dx sum((x*2) * x) = 4x.
  Tensor x = vec({1, 3}).requires_grad_();
  Tensor y = x * 2.0;
  y.mul_(x);
  y.sum().backward();
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{4, 12}));
}

TEST(Autograd, NoGradAndInferenceModeRecordNothing) {
  Tensor x = vec({1}).requires_grad_();
  {
    NoGradGuard g;
    EXPECT_FALSE((x * 2.0).requires_grad());
    AutoGradMode enable(true);
    EXPECT_TRUE((x * 2.0).requires_grad());
  }
  {
    InferenceMode m;
    EXPECT_TRUE(InferenceMode::is_enabled());
    EXPECT_FALSE((x * 2.0).requires_grad());
  }
  EXPECT_TRUE(GradMode::is_enabled());
  Tensor d = (x * 2.0).detach();
  EXPECT_FALSE(d.requires_grad());
}

TEST(Autograd, GradFunctionDoesNotTouchLeafGrads) {
  Tensor x = vec({2}).requires_grad_();
  Tensor w = vec({5}).requires_grad_();
  Tensor y = (x * w * x).sum();
  auto g = grad({y}, {x, w});
  EXPECT_DOUBLE_EQ(g[0].item<double>(), 2 * 5 * 2);
  EXPECT_DOUBLE_EQ(g[1].item<double>(), 4);
  EXPECT_FALSE(x.grad().defined());
  Tensor unused = vec({1}).requires_grad_();
  Tensor z = (x * 2.0).sum();
  EXPECT_THROW(grad({z}, {unused}), AutogradError);
  EXPECT_FALSE(grad({(x * 2.0).sum()}, {unused}, {}, {}, /*allow_unused=*/true)[0].defined());
}

TEST(Autograd, CreateGraphGivesSecondDerivatives) {
  Tensor x = vec({3}).requires_grad_();
  Tensor y = (x * x * x).sum();  // y' = 3x^2, y'' = 6x
  auto g = grad({y}, {x}, {}, {.create_graph = true});
  EXPECT_DOUBLE_EQ(g[0].item<double>(), 27);
  auto gg = grad({g[0].sum()}, {x});
  EXPECT_DOUBLE_EQ(gg[0].item<double>(), 18);
}

TEST(Autograd, AnomalyModeNamesTheOp) {
  Tensor x = vec({0}).requires_grad_();
  Tensor y = (vec({1}) / x).sum();  // d/dx (1/x) at 0 = -inf/nan
  DetectAnomalyGuard guard;
  try {
    y.backward();
    FAIL() << "expected an anomaly error";
  } catch (const AutogradError& e) {
    EXPECT_NE(std::string(e.what()).find("div"), std::string::npos) << e.what();
  }
}

TEST(Autograd, BroadcastGradientsReduceToInputShape) {
  Tensor a = from_vector<double>({1, 2, 3}, Shape{3, 1}).requires_grad_();
  Tensor b = from_vector<double>({10, 20}, Shape{2}).requires_grad_();
  (a * b).sum().backward();
  EXPECT_EQ(vals(a.grad()), (std::vector<double>{30, 30, 30}));
  EXPECT_EQ(vals(b.grad()), (std::vector<double>{6, 6}));
  EXPECT_EQ(a.grad().shape(), (Shape{3, 1}));
}

TEST(Autograd, MixedDtypeGradientsKeepInputDtype) {
  Tensor a = from_vector<float>({1, 2}).requires_grad_();
  Tensor b = from_vector<double>({3, 4}).requires_grad_();
  (a * b).sum().backward();
  EXPECT_EQ(a.grad().dtype(), kFloat32);
  EXPECT_EQ(b.grad().dtype(), kFloat64);
  EXPECT_EQ(a.grad().to_vector<float>(), (std::vector<float>{3, 4}));
}

TEST(Gradcheck, DetectsAWrongGradient) {
  Tensor x = vec({0.5, -1.5}).requires_grad_();
  auto ok =
      gradcheck([](const std::vector<Tensor>& in) { return std::vector{in[0] * in[0]}; }, {x});
  EXPECT_TRUE(ok.ok) << ok.message;
  // A function whose autograd graph is cut (detach) has a zero analytical gradient: must fail.
  auto bad = gradcheck(
      [](const std::vector<Tensor>& in) {
        return std::vector{in[0].detach() * in[0].detach() + in[0] * 0.0};
      },
      {x});
  EXPECT_FALSE(bad.ok);
}

}  // namespace
}  // namespace ath
