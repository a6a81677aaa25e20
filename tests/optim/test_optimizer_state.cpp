// Optimizer state dicts: PyTorch's layout, a save/load round trip in the middle of a trajectory
// that continues bit for bit, dtype casts on load, and bad state dicts that throw and change
// nothing.
#include <gtest/gtest.h>

#include "optim_test_util.h"

namespace ath::testing {
namespace {

using namespace optim;

// Passes the state through what a checkpoint does: json text, and tensor copies.
OptimizerState through_checkpoint(const OptimizerState& s) {
  OptimizerState out;
  out.meta = json::parse(s.meta.dump());
  for (const auto& [k, t] : s.tensors) out.tensors.insert(k, t.clone());
  return out;
}

struct Case {
  const char* kind;
  json options;
};

const std::vector<Case> kCases = {
    {"SGD", {{"lr", 0.05}, {"momentum", 0.9}, {"nesterov", true}, {"weight_decay", 0.01}}},
    {"Adam", {{"lr", 0.01}, {"amsgrad", true}, {"weight_decay", 0.1}}},
    {"AdamW", {{"lr", 0.01}, {"maximize", true}}},
    {"RMSprop", {{"lr", 0.01}, {"momentum", 0.5}, {"centered", true}}},
    {"Adagrad", {{"lr", 0.1}, {"lr_decay", 0.01}, {"initial_accumulator_value", 0.1}}},
    {"Adamax", {{"lr", 0.01}}},
    {"NAdam", {{"lr", 0.01}, {"weight_decay", 0.01}}},
};

std::vector<Tensor> make_params(DType dt = kFloat32) {
  Generator gen(3);
  return {randn({64, 40}, {.generator = &gen}).to(dt).requires_grad_(),
          randn({40}, {.generator = &gen}).to(dt).requires_grad_(),
          randn({5}, {.generator = &gen}).to(dt).requires_grad_()};  // never gets a grad
}

std::vector<ParamGroup> two_groups(const std::vector<Tensor>& p, const std::string& kind) {
  ParamGroup second{.params = {p[1], p[2]}, .lr = 0.003};
  if (kind == "SGD") second.momentum = 0.5;
  return {{.params = {p[0]}}, second};
}

void steps(Optimizer& opt, const std::vector<Tensor>& p, int from, int to) {
  for (int t = from; t < to; ++t) {
    set_quadratic_grads({p[0], p[1]}, t);
    opt.step();
  }
}

TEST(OptimizerState, LayoutMirrorsPyTorch) {
  std::vector<Tensor> p = make_params();
  Adam opt(two_groups(p, "Adam"), {.lr = 0.01, .amsgrad = true});
  opt.param_group(0).set_value("initial_lr", 0.01);
  steps(opt, p, 0, 2);
  OptimizerState s = opt.state_dict();
  const json& g = s.meta["param_groups"];
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0]["params"], json::array({0}));
  EXPECT_EQ(g[1]["params"], json::array({1, 2}));
  EXPECT_EQ(g[1]["lr"], 0.003);
  EXPECT_EQ(g[0]["betas"], json::array({0.9, 0.999}));
  EXPECT_EQ(g[0]["amsgrad"], true);
  EXPECT_EQ(g[0]["initial_lr"], 0.01);
  EXPECT_EQ(s.meta["state"]["0"]["step"], 2);
  EXPECT_FALSE(s.meta["state"].contains("2"));  // no grad, no state
  EXPECT_EQ(s.tensors.keys(),
            (std::vector<std::string>{"state.0.exp_avg", "state.0.exp_avg_sq",
                                      "state.0.max_exp_avg_sq", "state.1.exp_avg",
                                      "state.1.exp_avg_sq", "state.1.max_exp_avg_sq"}));
  EXPECT_TRUE(s.tensors.at("state.0.exp_avg").shares_storage(opt.state(0, 0).tensor("exp_avg")));
}

TEST(OptimizerState, RoundTripMidTrajectoryContinuesBitForBit) {
  for (DType dt : {kFloat32, kFloat64}) {
    for (const Case& c : kCases) {
      SCOPED_TRACE(std::string(c.kind) + " " + std::string(dtype_name(dt)));
      std::vector<Tensor> p = make_params(dt);
      auto opt = make_optimizer(c.kind, c.options, two_groups(p, c.kind));
      steps(*opt, p, 0, 10);
      OptimizerState saved = through_checkpoint(opt->state_dict());
      std::vector<Tensor> q;
      for (const Tensor& t : p) q.push_back(t.detach().clone().requires_grad_());
      steps(*opt, p, 10, 20);

      auto fresh = make_optimizer(c.kind, json::object({{"lr", 0.5}}), two_groups(q, c.kind));
      fresh->load_state_dict(saved);
      EXPECT_EQ(fresh->lr(1), 0.003);
      steps(*fresh, q, 10, 20);
      for (std::size_t i = 0; i < p.size(); ++i)
        EXPECT_EQ(p[i].to_vector<double>(), q[i].to_vector<double>()) << "param " << i;
      OptimizerState a = opt->state_dict(), b = fresh->state_dict();
      EXPECT_EQ(a.meta, b.meta);
      for (const auto& [k, t] : a.tensors)
        EXPECT_EQ(t.to_vector<double>(), b.tensors.at(k).to_vector<double>()) << k;
    }
  }
}

TEST(OptimizerState, LoadCastsStateToTheParamsDtype) {
  std::vector<Tensor> p = make_params(kFloat64);
  Adam opt({p[0], p[1]});
  steps(opt, p, 0, 2);
  std::vector<Tensor> q = make_params(kFloat32);
  Adam other({q[0], q[1]});
  other.load_state_dict(opt.state_dict());
  EXPECT_EQ(other.state(0, 0).tensor("exp_avg").dtype(), kFloat32);
  EXPECT_EQ(other.state(0, 0).tensor("exp_avg").to_vector<float>(),
            opt.state(0, 0).tensor("exp_avg").to(kFloat32).to_vector<float>());
  // A copy: stepping the loaded optimizer leaves the source's state alone.
  Tensor before = opt.state(0, 0).tensor("exp_avg").clone();
  steps(other, q, 2, 3);
  EXPECT_EQ(opt.state(0, 0).tensor("exp_avg").to_vector<double>(), before.to_vector<double>());
}

// Every bad variant must throw `E` and leave the optimizer exactly as it was.
template <class E>
void expect_rejected(Optimizer& opt, const OptimizerState& bad, const std::string& word) {
  OptimizerState before = through_checkpoint(opt.state_dict());
  try {
    opt.load_state_dict(bad);
    ADD_FAILURE() << "expected a failure mentioning " << word;
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(word), std::string::npos) << e.what();
  }
  OptimizerState after = opt.state_dict();
  EXPECT_EQ(before.meta, after.meta);
  for (const auto& [k, t] : before.tensors)
    EXPECT_EQ(t.template to_vector<double>(), after.tensors.at(k).template to_vector<double>())
        << k;
}

TEST(OptimizerState, BadStateDictsThrowAndChangeNothing) {
  std::vector<Tensor> p = make_params();
  Adam opt(two_groups(p, "Adam"), {.lr = 0.01});
  steps(opt, p, 0, 3);
  const OptimizerState good = through_checkpoint(opt.state_dict());
  auto variant = [&](auto&& edit) {
    OptimizerState s = through_checkpoint(good);
    edit(s);
    return s;
  };
  expect_rejected<ValueError>(
      opt, variant([](OptimizerState& s) { s.meta["param_groups"].erase(1); }), "parameter groups");
  expect_rejected<ValueError>(
      opt, variant([](OptimizerState& s) { s.meta["param_groups"][1]["params"] = {1}; }),
      "has 1 parameters");
  expect_rejected<KeyError>(
      opt, variant([](OptimizerState& s) { s.tensors.erase("state.1.exp_avg_sq"); }),
      "state.1.exp_avg_sq");
  expect_rejected<ValueError>(opt, variant([](OptimizerState& s) {
                                s.tensors.at("state.0.exp_avg") = zeros({3, 3});
                              }),
                              "shape");
  expect_rejected<KeyError>(
      opt, variant([](OptimizerState& s) { s.tensors.insert("state.0.bogus", zeros({40})); }),
      "state.0.bogus");
  expect_rejected<KeyError>(
      opt, variant([](OptimizerState& s) { s.meta["param_groups"][0].erase("betas"); }), "betas");
  expect_rejected<ValueError>(
      opt, variant([](OptimizerState& s) { s.meta["param_groups"][0]["amsgrad"] = 1; }), "amsgrad");
  expect_rejected<ValueError>(
      opt, variant([](OptimizerState& s) { s.meta["param_groups"][1]["lr"] = -1; }),
      "learning rate");
  expect_rejected<KeyError>(opt, variant([](OptimizerState& s) {
                              s.meta["state"]["7"] = {{"step", 1}};
                            }),
                            "7");
  expect_rejected<KeyError>(
      opt, variant([](OptimizerState& s) { s.meta["state"]["0"].erase("step"); }), "step");
  expect_rejected<ValueError>(
      opt, variant([](OptimizerState& s) { s.meta["state"]["0"]["step"] = -2; }), "step");
  expect_rejected<KeyError>(opt, variant([](OptimizerState& s) { s.meta.erase("state"); }),
                            "state");
  expect_rejected<ValueError>(opt, variant([](OptimizerState& s) { s.meta = json::array(); }),
                              "object");
  // An SGD state dict is not an Adam one.
  SGD sgd(two_groups(make_params(), "SGD"), {.lr = 0.1, .momentum = 0.9});
  expect_rejected<KeyError>(opt, sgd.state_dict(), "betas");
  opt.load_state_dict(good);  // and the good one still loads
}

}  // namespace
}  // namespace ath::testing
