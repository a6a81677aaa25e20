// Optimizer base behaviour: groups and defaults, option checks, skipping params without grad,
// zero_grad, closures, dtypes, non-contiguous params, version counters, thread-count
// independence.
#include <gtest/gtest.h>

#include <limits>

#include "optim_test_util.h"
#include "support/isa_cap.h"

namespace ath::testing {
namespace {

using namespace optim;

Tensor param(std::vector<float> v) { return from_vector<float>(v).requires_grad_(); }

template <class Fn>
void expect_value_error(Fn&& fn, const std::vector<std::string>& words) {
  try {
    fn();
    ADD_FAILURE() << "expected a ValueError mentioning " << words[0];
  } catch (const ValueError& e) {
    for (const std::string& w : words)
      EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << e.what() << " lacks " << w;
  }
}

TEST(Optimizer, GroupsFallBackToTheOptimizersOptions) {
  Tensor a = param({1, 2}), b = param({3});
  SGD opt({{.params = {a}}, {.params = {b}, .lr = 0.01}},
          {.lr = 0.1, .momentum = 0.9, .weight_decay = 0.5});
  ASSERT_EQ(opt.num_param_groups(), 2u);
  EXPECT_EQ(opt.options(0).lr, 0.1);
  EXPECT_EQ(opt.options(1).lr, 0.01);
  EXPECT_EQ(opt.options(1).momentum, 0.9);
  EXPECT_EQ(opt.options(1).weight_decay, 0.5);
  EXPECT_EQ(opt.defaults().lr, 0.1);

  opt.param_group(1).set_lr(0.02);
  EXPECT_EQ(opt.lr(1), 0.02);
  EXPECT_EQ(opt.param_groups()[1].lr(), 0.02);
  EXPECT_EQ(opt.param_group(0).momentum(), 0.9);
  EXPECT_EQ(opt.momentum_kind(), MomentumKind::Momentum);
  EXPECT_EQ(opt.param_group(1).params()[0].impl(), b.impl());

  Tensor c = param({5});
  opt.add_param_group({.params = {c}, .nesterov = true});
  EXPECT_EQ(opt.options(2).lr, 0.1);
  EXPECT_TRUE(opt.options(2).nesterov);
  EXPECT_THROW(opt.param_group(3), IndexError);

  Adam adam({{.params = {a}}, {.params = {b}, .betas = Betas{0.5, 0.6}, .amsgrad = true}});
  EXPECT_EQ(adam.options(1).betas, (Betas{0.5, 0.6}));
  EXPECT_TRUE(adam.options(1).amsgrad);
  EXPECT_EQ(adam.options(1).lr, 1e-3);
  EXPECT_EQ(adam.momentum_kind(), MomentumKind::Beta1);
  adam.set_momentum(0, 0.8);
  EXPECT_EQ(adam.options(0).betas.first, 0.8);
  Adagrad ada({a});
  EXPECT_EQ(ada.momentum_kind(), MomentumKind::None);
  EXPECT_THROW(ada.momentum(0), ValueError);
}

TEST(Optimizer, BadOptionsNameTheOptimizerAndTheOption) {
  Tensor a = param({1});
  expect_value_error([&] { SGD({a}, {.lr = -1}); }, {"SGD", "learning rate"});
  expect_value_error([&] { SGD({a}, {.momentum = 0.9}); }, {"SGD", "lr"});
  expect_value_error([&] { SGD({a}, {.lr = 0.1, .momentum = -0.1}); }, {"SGD", "momentum"});
  expect_value_error([&] { SGD({a}, {.lr = 0.1, .nesterov = true}); }, {"SGD", "nesterov"});
  expect_value_error(
      [&] { SGD({a}, {.lr = 0.1, .momentum = 0.9, .dampening = 0.1, .nesterov = true}); },
      {"SGD", "dampening"});
  expect_value_error([&] { SGD({a}, {.lr = 0.1, .weight_decay = -1}); }, {"SGD", "weight_decay"});
  expect_value_error([&] { Adam({a}, {.lr = -1e-3}); }, {"Adam", "learning rate"});
  expect_value_error([&] { Adam({a}, {.betas = {1.0, 0.9}}); }, {"Adam", "beta", "index 0"});
  expect_value_error([&] { Adam({a}, {.betas = {0.9, -0.1}}); }, {"Adam", "beta", "index 1"});
  expect_value_error([&] { Adam({a}, {.eps = -1}); }, {"Adam", "epsilon"});
  // lr: .inf in a config was accepted and trained into NaNs.
  const double inf = std::numeric_limits<double>::infinity();
  expect_value_error([&] { Adam({a}, {.lr = inf}); }, {"Adam", "learning rate inf", "finite"});
  expect_value_error([&] { SGD({a}, {.lr = 0.1, .weight_decay = inf}); }, {"SGD", "finite"});
  expect_value_error([&] { AdamW({a}, {.weight_decay = -0.1}); }, {"AdamW", "weight_decay"});
  expect_value_error([&] { RMSprop({a}, {.alpha = -0.5}); }, {"RMSprop", "alpha"});
  expect_value_error([&] { RMSprop({a}, {.momentum = -0.5}); }, {"RMSprop", "momentum"});
  expect_value_error([&] { Adagrad({a}, {.lr_decay = -1}); }, {"Adagrad", "lr_decay"});
  expect_value_error([&] { Adagrad({a}, {.initial_accumulator_value = -1}); },
                     {"Adagrad", "initial_accumulator_value"});
  expect_value_error([&] { Adamax({a}, {.betas = {0.9, 1.0}}); }, {"Adamax", "beta"});
  expect_value_error([&] { NAdam({a}, {.momentum_decay = -1}); }, {"NAdam", "momentum_decay"});
  // Per-group values are checked too, and an option the optimizer lacks is refused.
  expect_value_error([&] { Adam({{.params = {a}, .lr = -2}}); }, {"Adam", "learning rate"});
  expect_value_error([&] { Adam({{.params = {a}, .momentum = 0.9}}); }, {"Adam", "momentum"});
  expect_value_error([&] { SGD({{.params = {a}}}, {}); }, {"SGD", "required option lr"});
  SGD ok({{.params = {a}, .lr = 0.5}});  // lr from the group alone is enough
  EXPECT_EQ(ok.lr(0), 0.5);
}

TEST(Optimizer, BadParameterListsAreRefused) {
  Tensor a = param({1}), b = param({2});
  expect_value_error([&] { SGD(std::vector<Tensor>{}, {.lr = 0.1}); }, {"empty parameter list"});
  expect_value_error([&] { Adam(std::vector<ParamGroup>{}); }, {"empty parameter list"});
  expect_value_error([&] { Adam({a, a}); }, {"more than once"});
  expect_value_error([&] { Adam({{.params = {a}}, {.params = {b, a}}}); }, {"more than once"});
  expect_value_error([&] { Adam({a * 2.0}); }, {"non-leaf"});
  expect_value_error([&] { Adam({Tensor()}); }, {"undefined"});
  Adam opt({a});
  EXPECT_THROW(opt.add_param_group({.params = {a}}), ValueError);
  EXPECT_EQ(opt.num_param_groups(), 1u);  // a failed add leaves nothing behind
}

TEST(Optimizer, ParamsWithoutGradAreSkippedAndGetNoState) {
  Tensor a = param({1, 2}), b = param({3, 4});
  Adam opt({a, b}, {.lr = 0.1});
  a.set_grad(from_vector<float>({1, -1}));
  opt.step();
  EXPECT_NE(a.to_vector<float>(), (std::vector<float>{1, 2}));
  EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{3, 4}));
  EXPECT_FALSE(opt.state(0, 0).empty());
  EXPECT_TRUE(opt.state(0, 1).empty());
  EXPECT_EQ(opt.state(0, 0).counter("step"), 1);
  EXPECT_EQ(opt.state(0, 0).tensors.size(), 2u);
}

TEST(Optimizer, ZeroGradDropsOrZeroesGradients) {
  Tensor a = param({1, 2});
  SGD opt({a}, {.lr = 0.1});
  a.set_grad(from_vector<float>({1, 1}));
  opt.zero_grad(false);
  ASSERT_TRUE(a.grad().defined());
  EXPECT_EQ(a.grad().to_vector<float>(), (std::vector<float>{0, 0}));
  opt.zero_grad();
  EXPECT_FALSE(a.grad().defined());
}

TEST(Optimizer, StepWithClosureRunsItWithGradModeOn) {
  Tensor w = param({2.0f});
  SGD opt({w}, {.lr = 0.25});
  NoGradGuard outer;  // the closure still records
  Tensor loss = opt.step([&] {
    opt.zero_grad();
    Tensor l = (w * w).sum();
    l.backward();
    return l;
  });
  EXPECT_EQ(loss.item<float>(), 4.0f);
  EXPECT_EQ(w.item<float>(), 1.0f);  // 2 - 0.25 * 4
}

TEST(Optimizer, LowPrecisionParamsUpdateInFloat32AndRoundBack) {
  // bf16-true training: the update computes in float32 on widened copies and rounds the
  // parameter and its state back, so one step equals the float32 step, rounded.
  for (DType dt : {kBFloat16, kFloat16}) {
    SCOPED_TRACE(dtype_name(dt));
    manual_seed(3);
    Tensor p0 = randn({7}).to(dt), g = randn({7}).to(dt);
    Tensor low = p0.clone().requires_grad_(), wide = p0.to(kFloat32).requires_grad_();
    Tensor low2 = p0.clone().requires_grad_(), wide2 = p0.to(kFloat32).requires_grad_();
    Adam adam_low({low}, {.lr = 0.01}), adam_wide({wide}, {.lr = 0.01});
    SGD sgd_low({low2}, {.lr = 0.1, .momentum = 0.9}),
        sgd_wide({wide2}, {.lr = 0.1, .momentum = 0.9});
    for (Tensor t : {low, low2}) t.set_grad(g);
    for (Tensor t : {wide, wide2}) t.set_grad(g.to(kFloat32));
    for (Optimizer* o :
         std::initializer_list<Optimizer*>{&adam_low, &adam_wide, &sgd_low, &sgd_wide})
      o->step();
    EXPECT_EQ(low.dtype(), dt);
    EXPECT_EQ(low.to_vector<float>(), wide.to(dt).to_vector<float>());
    EXPECT_EQ(low2.to_vector<float>(), wide2.to(dt).to_vector<float>());
    EXPECT_NE(low.to_vector<float>(), p0.to_vector<float>());  // it moved
  }
  // Integer parameters are refused, naming the optimizer.
  Tensor i = zeros({3}, kInt64);
  i.set_grad(zeros({3}, kInt64));
  Adam opt({i});
  try {
    opt.step();
    ADD_FAILURE() << "expected DTypeError";
  } catch (const DTypeError& e) {
    EXPECT_NE(std::string(e.what()).find("Adam"), std::string::npos) << e.what();
  }
}

TEST(Optimizer, NonContiguousParamsAreUpdatedInPlace) {
  Tensor base = from_vector<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  Tensor pt = base.t().detach();  // [3, 2], strided, a leaf sharing base's storage
  pt.requires_grad_();
  ASSERT_FALSE(pt.is_contiguous());
  Tensor ref = pt.detach().contiguous().clone().requires_grad_();
  Adam a({pt}, {.lr = 0.1, .weight_decay = 0.1}), b({ref}, {.lr = 0.1, .weight_decay = 0.1});
  for (int t = 0; t < 3; ++t) {
    set_quadratic_grads<float>({pt}, t);
    set_quadratic_grads<float>({ref}, t);
    a.step();
    b.step();
  }
  EXPECT_EQ(pt.contiguous().to_vector<float>(), ref.to_vector<float>());
  EXPECT_EQ(base.t().contiguous().to_vector<float>(), ref.to_vector<float>());
}

TEST(Optimizer, StepBumpsVersionCounters) {
  Tensor a = param({1, 2});
  RMSprop opt({a}, {.momentum = 0.5, .centered = true});
  a.set_grad(from_vector<float>({1, 1}));
  const uint32_t v0 = a.version();
  opt.step();
  EXPECT_GT(a.version(), v0);
  for (const auto& [name, t] : opt.state(0, 0).tensors) EXPECT_GT(t.version(), 0u) << name;
}

TEST(Optimizer, StateThatNoLongerFitsItsParamIsAnError) {
  Tensor a = param({1, 2});
  Adam opt({a});
  a.set_grad(from_vector<float>({1, 1}));
  opt.step();
  a.set_data(zeros({5}));  // replaced by a larger tensor: the old state must not be read
  a.set_grad(zeros({5}));
  EXPECT_THROW(opt.step(), ValueError);
}

TEST(Optimizer, AdagradCreatesStateForEveryParamAtConstruction) {
  Tensor a = param({1, 2}), b = param({3});
  Adagrad opt({a}, {.initial_accumulator_value = 0.25});
  EXPECT_EQ(opt.state(0, 0).counter("step"), 0);
  EXPECT_EQ(opt.state(0, 0).tensor("sum").to_vector<float>(), (std::vector<float>{0.25, 0.25}));
  opt.add_param_group({.params = {b}, .initial_accumulator_value = 0.5});
  EXPECT_EQ(opt.state(1, 0).tensor("sum").to_vector<float>(), (std::vector<float>{0.5}));
}

TEST(Optimizer, BaselineIsaLoopsGiveTheSameBits) {
  // Without AVX2+FMA the loops run for the baseline ISA, where std::fma is libm's exact fma.
  const std::vector<std::pair<std::string, json>> cases = {
      {"SGD", {{"lr", 0.1}, {"momentum", 0.9}, {"nesterov", true}, {"weight_decay", 0.1}}},
      {"Adam", {{"lr", 0.1}, {"amsgrad", true}, {"weight_decay", 0.1}}},
      {"AdamW", {{"lr", 0.1}, {"maximize", true}}},
      {"RMSprop", {{"lr", 0.1}, {"momentum", 0.5}, {"centered", true}, {"weight_decay", 0.1}}},
      {"Adagrad", {{"lr", 0.1}, {"lr_decay", 0.1}, {"weight_decay", 0.1}}},
      {"Adamax", {{"lr", 0.1}, {"weight_decay", 0.1}}},
      {"NAdam", {{"lr", 0.1}, {"weight_decay", 0.1}}}};
  for (DType dt : {kFloat32, kFloat64}) {
    for (const auto& [kind, opts] : cases) {
      std::vector<std::vector<double>> results;
      for (CpuIsa isa : isas_up_to_current()) {
        ScopedMaxCpuIsa cap(isa);
        Generator gen(9);
        Tensor p = randn({1000}, {.generator = &gen}).to(dt).requires_grad_();
        auto opt = make_optimizer(kind, opts, {{.params = {p}}});
        for (int t = 0; t < 4; ++t) {
          set_quadratic_grads({p}, t);
          opt->step();
        }
        results.push_back(p.to_vector<double>());
      }
      for (std::size_t i = 1; i < results.size(); ++i)
        EXPECT_EQ(results[0], results[i])
            << kind << " " << dtype_name(dt) << " at " << cpu_isa_name(static_cast<CpuIsa>(i));
    }
  }
}

TEST(Optimizer, ResultsDoNotDependOnTheThreadCount) {
  const int64_t n = 100003;  // several chunks of the parallel loop
  auto run = [&](int threads) {
    set_num_threads(threads);
    Generator gen(7);
    Tensor p = randn({n}, {.generator = &gen}).requires_grad_();
    NAdam opt({p}, {.lr = 0.01, .weight_decay = 0.01});
    for (int t = 0; t < 3; ++t) {
      set_quadratic_grads<float>({p}, t);
      opt.step();
    }
    return p.to_vector<float>();
  };
  const int saved = get_num_threads();
  std::vector<float> one = run(1), two = run(2);
  set_num_threads(saved);
  EXPECT_EQ(one, two);
}

}  // namespace
}  // namespace ath::testing
