// Autocast (athanor/ops/autocast.h): the registry's per-op policy decides the dtype each op runs
// in inside an AutocastGuard; the casts are differentiable, so float32 parameters get float32
// gradients close to a float32 run's; parameters are cast once per scope; backward runs without
// autocast.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include "athanor/athanor.h"
#include "athanor/nn/rnn.h"

namespace ath::testing {
namespace {

// The dtype of the first floating input of each op's first call.
struct InputDTypes : OpObserver {
  void on_op(const OpDef& op, TensorSpan in, std::span<const Tensor>, const void*) override {
    calls.push_back(op.name);
    for (const Tensor& t : in) {
      if (is_floating(t.dtype())) {
        dtype.emplace(op.name, t.dtype());  // the op's first call
        break;
      }
    }
  }
  std::map<std::string, DType> dtype;
  std::vector<std::string> calls;
};

template <class Fn>
InputDTypes observe(Fn&& fn) {
  InputDTypes seen;
  OpObserver* previous = set_op_observer(&seen);
  fn();
  set_op_observer(previous);
  return seen;
}

TEST(Autocast, ThePolicyIsOneFieldOfEachOpDefinition) {
  std::set<std::string> low, f32;
  for (const OpDef* op : all_ops()) {
    if (op->autocast == AutocastPolicy::LowPrecision) low.insert(op->name);
    if (op->autocast == AutocastPolicy::Float32) f32.insert(op->name);
  }
  EXPECT_EQ(low, (std::set<std::string>{"mm", "bmm", "matmul", "addmm", "linear", "convolution",
                                        "linear_relu", "convolution_relu"}));
  for (const char* name : {"softmax", "log_softmax", "attention_softmax", "layer_norm",
                           "group_norm", "batch_norm", "cross_entropy", "nll_loss", "mse_loss",
                           "sum", "mean", "norm", "logsumexp", "exp", "log", "cumsum"})
    EXPECT_TRUE(f32.contains(name)) << name;
  // Backward ops run without autocast: none carries a policy.
  for (const std::string& name : f32) EXPECT_EQ(name.find("backward"), std::string::npos) << name;
}

TEST(Autocast, EachOpFamilyRunsInItsPolicysDType) {
  for (DType low : {kBFloat16, kFloat16}) {
    SCOPED_TRACE(dtype_name(low));
    manual_seed(1);
    Tensor x = randn({4, 8}), w = randn({6, 8}), b = randn({6});
    Tensor img = randn({2, 3, 8, 8}), k = randn({4, 3, 3, 3});
    Tensor target = from_vector<int64_t>({0, 1, 2, 3});
    InputDTypes seen = observe([&] {
      AutocastGuard autocast(low);
      Tensor y = linear(x, w, b);  // float32 in, low precision out
      EXPECT_EQ(y.dtype(), low);
      EXPECT_EQ(matmul(x, w.t()).dtype(), low);
      EXPECT_EQ(conv2d(img, k).dtype(), low);
      Tensor p = softmax(y, 1), lp = log_softmax(y, 1);  // low in, float32 out
      EXPECT_EQ(p.dtype(), kFloat32);
      EXPECT_EQ(lp.dtype(), kFloat32);
      EXPECT_EQ(layer_norm(y, {6}).dtype(), kFloat32);
      EXPECT_EQ(cross_entropy(y, target).dtype(), kFloat32);
      EXPECT_EQ(y.sum().dtype(), kFloat32);
      EXPECT_EQ(exp(y).dtype(), kFloat32);
      EXPECT_EQ(relu(y).dtype(), low);  // no policy: the input's dtype
      EXPECT_EQ(matmul(x.to(kFloat64), w.t().to(kFloat64)).dtype(), kFloat64);  // never cast
    });
    EXPECT_EQ(seen.dtype["linear"], low);
    EXPECT_EQ(seen.dtype["mm"], low);  // matmul of 2-D operands is mm
    EXPECT_EQ(seen.dtype["convolution"], low);
    for (const char* name : {"softmax", "log_softmax", "layer_norm", "cross_entropy", "sum", "exp"})
      EXPECT_EQ(seen.dtype[name], kFloat32) << name;
    EXPECT_EQ(seen.dtype["relu"], low);
  }
  // Outside a scope nothing is cast.
  Tensor x = randn({2, 3}), w = randn({4, 3});
  EXPECT_EQ(linear(x, w).dtype(), kFloat32);
  EXPECT_FALSE(autocast_dtype().has_value());
}

TEST(Autocast, MasterWeightsGetFloat32GradientsCloseToAFloat64Reference) {
  manual_seed(2);
  // Operands that bfloat16 holds exactly, so the float64 reference sees the same numbers and
  // the same ReLU pattern (a float32 run would flip the sign of pre-activations within
  // rounding of zero, and each flip moves a weight gradient by a whole term).
  auto bf16_exact = [](const Tensor& t) { return t.to(kBFloat16).to(kFloat32); };
  Tensor x = bf16_exact(randn({32, 16})), target = randint(0, 10, {32});
  Tensor w1 = bf16_exact(randn({64, 16}) * 0.2).requires_grad_(),
         w2 = bf16_exact(randn({10, 64}) * 0.2).requires_grad_();
  Tensor x64 = x.to(kFloat64), w1_64 = w1.detach().to(kFloat64).requires_grad_(),
         w2_64 = w2.detach().to(kFloat64).requires_grad_();
  Tensor ref = cross_entropy(relu(linear(x64, w1_64)).matmul(w2_64.t()), target);
  ref.backward();
  Tensor loss;
  {
    AutocastGuard autocast(kBFloat16);
    loss = cross_entropy(relu(linear(x, w1)).matmul(w2.t()), target);
  }
  EXPECT_EQ(loss.dtype(), kFloat32);
  loss.backward();
  ASSERT_EQ(w1.grad().dtype(), kFloat32);
  ASSERT_EQ(w2.grad().dtype(), kFloat32);
  EXPECT_NEAR(loss.item<double>(), ref.item<double>(), 0.01 * std::abs(ref.item<double>()));
  // Activations and output gradients are rounded to bfloat16 (8 bits of mantissa) between the
  // products: gradients agree to about 1% of their scale.
  for (auto [g, g64] : {std::pair{w1.grad(), w1_64.grad()}, std::pair{w2.grad(), w2_64.grad()}}) {
    const double scale = max(g64.abs()).item<double>();
    EXPECT_LT(max((g.to(kFloat64) - g64).abs()).item<double>(), 0.02 * scale);
  }
}

TEST(Autocast, AParameterIsCastOncePerScopeAndAgainAfterAnInPlaceUpdate) {
  Tensor w = randn({4, 4}).requires_grad_(), x = randn({2, 4});
  auto casts = [](const InputDTypes& seen) {
    return std::count(seen.calls.begin(), seen.calls.end(), "to_dtype");
  };
  InputDTypes seen = observe([&] {
    AutocastGuard autocast(kBFloat16);
    linear(x, w);
    linear(x, w);  // w's cast is reused; x (not a parameter) is cast each time
    {
      NoGradGuard no_grad;
      w.add_(ones({4, 4}));  // a new version: recast
    }
    linear(x, w);
  });
  EXPECT_EQ(casts(seen), 2 + 3);  // w twice, x three times
  InputDTypes next = observe([&] {
    AutocastGuard autocast(kBFloat16);
    linear(x, w);  // a new scope: the cache was cleared
  });
  EXPECT_EQ(casts(next), 2);
}

TEST(Autocast, RecurrentLayersRunTheirRecurrenceInFloat32) {
  nn::LSTM lstm({.input_size = 6, .hidden_size = 5, .batch_first = true});
  nn::GRU gru({.input_size = 6, .hidden_size = 5, .batch_first = true});
  Tensor x = randn({3, 4, 6});
  for (nn::Module* m : std::initializer_list<nn::Module*>{&lstm, &gru}) {
    Tensor y;
    {
      AutocastGuard autocast(kBFloat16);
      y = m->forward(x);  // the input projection in bfloat16, the recurrence in float32
    }
    EXPECT_EQ(y.dtype(), kFloat32);
    y.sum().backward();
    for (const Tensor& p : m->parameters()) EXPECT_EQ(p.grad().dtype(), kFloat32);
  }
}

TEST(Autocast, GuardsNestAndRefuseOtherDTypes) {
  {
    AutocastGuard on(kFloat16);
    EXPECT_EQ(autocast_dtype(), kFloat16);
    {
      AutocastGuard off(std::nullopt);
      EXPECT_FALSE(autocast_dtype().has_value());
      EXPECT_EQ(linear(randn({2, 3}), randn({4, 3})).dtype(), kFloat32);
    }
    EXPECT_EQ(autocast_dtype(), kFloat16);
  }
  EXPECT_FALSE(autocast_dtype().has_value());
  try {
    AutocastGuard bad(kFloat64);
    ADD_FAILURE() << "float64 autocast accepted";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("bfloat16 or float16"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(autocast_dtype().has_value());
}

}  // namespace
}  // namespace ath::testing
