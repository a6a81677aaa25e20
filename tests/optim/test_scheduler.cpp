// Scheduler behaviour beyond the golden sequences: initial_lr bookkeeping, step(epoch), state
// dicts (mid-run round trips that continue bit for bit, bad ones that throw and change nothing)
// and option checks.
#include <gtest/gtest.h>

#include "sched_test_util.h"
#include "support/golden.h"

namespace ath::testing {
namespace {

using namespace optim;
using nlohmann::json;

TEST(Scheduler, ConstructionWritesInitialLrAndSteps) {
  SchedRig r = make_rig();
  r.opt->param_group(1).set_lr(0.07);
  auto& s = r.add<StepLR>(StepLROptions{.step_size = 2, .gamma = 0.5});
  EXPECT_EQ(r.opt->group_value(0, "initial_lr"), 0.1);
  EXPECT_EQ(r.opt->group_value(1, "initial_lr"), 0.07);
  EXPECT_EQ(s.base_lrs(), (std::vector<double>{0.1, 0.07}));
  EXPECT_EQ(s.last_epoch(), 0);
  // A second scheduler keeps the initial_lr the first one wrote (PyTorch's setdefault).
  r.opt->param_group(0).set_lr(0.3);
  auto& e = r.add<ExponentialLR>(ExponentialLROptions{.gamma = 0.5});
  EXPECT_EQ(e.base_lrs()[0], 0.1);
  EXPECT_EQ(r.opt->state_dict().meta["param_groups"][0]["initial_lr"], 0.1);
}

TEST(Scheduler, StepWithEpochUsesTheClosedForm) {
  SchedRig r = make_rig();
  auto& s = r.add<StepLR>(StepLROptions{.step_size = 3, .gamma = 0.5});
  s.step(7.0);
  EXPECT_EQ(s.last_epoch(), 7);
  EXPECT_EQ(s.get_last_lr()[0], 0.1 * std::pow(0.5, 2.0));
  EXPECT_THROW(s.step(2.5), ValueError);
  auto& m = r.add<MultiStepLR>(MultiStepLROptions{.milestones = {2, 4, 4}, .gamma = 0.1});
  m.step(5.0);
  EXPECT_DOUBLE_EQ(m.get_last_lr()[1], 0.05 * 1e-3);
}

TEST(Scheduler, ResumingNeedsInitialLr) {
  SchedRig r = make_rig();
  EXPECT_THROW(StepLR(*r.opt, {.step_size = 1, .last_epoch = 4}), KeyError);
  r.opt->param_group(0).set_value("initial_lr", 0.2);
  r.opt->param_group(1).set_value("initial_lr", 0.2);
  CosineAnnealingLR c(*r.opt, {.T_max = 10, .last_epoch = 4});
  EXPECT_EQ(c.last_epoch(), 5);
  EXPECT_DOUBLE_EQ(c.get_last_lr()[0], 0.2 * (1 + std::cos(M_PI * 5 / 10)) / 2);
}

// Builds case `name` twice; one runs straight through, the other is rebuilt from state dicts at
// step 10 (optimizer and scheduler through json text), and both must agree bit for bit.
void round_trip(const std::string& name) {
  SCOPED_TRACE(name);
  static const std::vector<GoldenCase> cases = load_golden("optim_sched");
  const GoldenCase* c = nullptr;
  for (const GoldenCase& k : cases)
    if (k.name == name) c = &k;
  ASSERT_NE(c, nullptr);
  const bool warm_epochs = c->attrs.contains("epochs") && c->attrs["kind"] != "OneCycleLR";
  auto advance = [&](SchedRig& r, int i) {
    r.opt->step();
    if (r.plateau)
      r.plateau->step(c->attrs["metrics"][i].get<double>());
    else if (warm_epochs)
      r.sched().step(c->attrs["epochs"][i].get<double>());
    else
      r.sched().step();
  };
  SchedRig a = build_case(name, c->attrs), b = build_case(name, c->attrs);
  for (int i = 0; i < 10; ++i) advance(a, i);
  json opt_state = json::parse(a.opt->state_dict().meta.dump());
  json sched_state =
      json::parse((a.plateau ? a.plateau->state_dict() : a.sched().state_dict()).dump());
  b.opt->load_state_dict({opt_state, {}});
  if (b.plateau)
    b.plateau->load_state_dict(sched_state);
  else
    b.sched().load_state_dict(sched_state);
  EXPECT_EQ(b.lrs(), a.lrs());
  for (int i = 10; i < 25; ++i) {
    advance(a, i);
    advance(b, i);
    ASSERT_EQ(a.lrs(), b.lrs()) << "step " << i + 1;
    ASSERT_EQ(a.momenta(), b.momenta()) << "step " << i + 1;
  }
  if (!a.plateau) {
    EXPECT_EQ(a.sched().state_dict(), b.sched().state_dict());
  }
}

TEST(Scheduler, StateDictRoundTripContinuesBitForBit) {
  for (const char* name :
       {"step_lr", "multistep_lr", "exponential_lr", "cosine_annealing_lr", "warm_restarts_tmult2",
        "warm_restarts_epochs", "linear_lr", "constant_lr", "lambda_lr", "lambda_lr_per_group",
        "polynomial_lr", "one_cycle_cos_momentum", "one_cycle_linear_three_phase_betas",
        "sequential_linear_cosine", "sequential_three", "chained_constant_exponential",
        "plateau_min_rel", "plateau_max_abs"})
    round_trip(name);
}

TEST(Scheduler, StateDictsCarryPyTorchsKeys) {
  SchedRig r = make_rig();
  auto& s = r.add<CosineAnnealingWarmRestarts>(CosineAnnealingWarmRestartsOptions{.T_0 = 3});
  json j = s.state_dict();
  for (const char* k : {"base_lrs", "last_epoch", "_step_count", "_last_lr", "T_0", "T_i", "T_mult",
                        "eta_min", "T_cur"})
    EXPECT_TRUE(j.contains(k)) << k;
  auto& l = r.add<LambdaLR>(LrLambda([](int64_t) { return 1.0; }));
  EXPECT_EQ(l.state_dict()["lr_lambdas"], json::array({nullptr, nullptr}));
  ReduceLROnPlateau p(*r.opt);
  json pj = p.state_dict();
  EXPECT_EQ(pj["best"], "inf");  // JSON has no infinity
  EXPECT_EQ(pj["mode"], "min");
}

template <class E, class S>
void expect_rejected(S& s, json bad, const std::string& word) {
  const json before = s.state_dict();
  try {
    s.load_state_dict(bad);
    ADD_FAILURE() << "expected a failure mentioning " << word;
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(word), std::string::npos) << e.what();
  }
  EXPECT_EQ(s.state_dict(), before);
}

TEST(Scheduler, BadStateDictsThrowAndChangeNothing) {
  SchedRig r = make_rig();
  auto& lin = r.add<LinearLR>(LinearLROptions{});
  auto& cos = r.add<CosineAnnealingLR>(CosineAnnealingLROptions{.T_max = 5});
  auto& seq = r.add<SequentialLR>(SchedulerRefs{lin, cos}, std::vector<int64_t>{3});
  for (int i = 0; i < 4; ++i) seq.step();
  json good = cos.state_dict();
  json bad = good;
  bad.erase("T_max");
  expect_rejected<KeyError>(cos, bad, "T_max");
  bad = good;
  bad["T_max"] = "ten";
  expect_rejected<ValueError>(cos, bad, "T_max");
  bad = good;
  bad["base_lrs"] = {0.1};
  expect_rejected<ValueError>(cos, bad, "base_lrs");
  bad = good;
  bad["T_max"] = 0;
  expect_rejected<ValueError>(cos, bad, "T_max");
  // A nested failure restores the children already loaded.
  json sgood = seq.state_dict();
  json sbad = sgood;
  sbad["_schedulers"][0]["last_epoch"] = 99;
  sbad["_schedulers"][1].erase("eta_min");
  expect_rejected<KeyError>(seq, sbad, "eta_min");
  EXPECT_EQ(lin.last_epoch(), sgood["_schedulers"][0]["last_epoch"].get<int64_t>());
  ReduceLROnPlateau p(*r.opt);
  json pbad = p.state_dict();
  pbad["mode"] = "sideways";
  expect_rejected<ValueError>(p, pbad, "sideways");
}

TEST(Scheduler, BadOptionsThrow) {
  SchedRig r = make_rig();
  Optimizer& o = *r.opt;
  EXPECT_THROW(StepLR(o, {}), ValueError);
  EXPECT_THROW(ExponentialLR(o, {}), ValueError);
  EXPECT_THROW(ConstantLR(o, {.factor = 1.5}), ValueError);
  EXPECT_THROW(LinearLR(o, {.start_factor = 0}), ValueError);
  EXPECT_THROW(LinearLR(o, {.end_factor = -1}), ValueError);
  EXPECT_THROW(CosineAnnealingLR(o, {}), ValueError);
  EXPECT_THROW(CosineAnnealingWarmRestarts(o, {.T_0 = 0}), ValueError);
  EXPECT_THROW(CosineAnnealingWarmRestarts(o, {.T_0 = 2, .T_mult = 0}), ValueError);
  EXPECT_THROW(PolynomialLR(o, {.total_iters = 0}), ValueError);
  EXPECT_THROW(LambdaLR(o, std::vector<LrLambda>{[](int64_t) { return 1.0; }}), ValueError);
  EXPECT_THROW(ReduceLROnPlateau(o, {.factor = 1.0}), ValueError);
  EXPECT_THROW(ReduceLROnPlateau(o, {.min_lr = {0.1, 0.2, 0.3}}), ValueError);
  EXPECT_THROW(OneCycleLR(o, {.total_steps = 10}), ValueError);           // no max_lr
  EXPECT_THROW(OneCycleLR(o, {.max_lr = 0.1}), ValueError);               // no length
  EXPECT_THROW(OneCycleLR(o, {.max_lr = 0.1, .epochs = 2}), ValueError);  // no steps_per_epoch
  EXPECT_THROW(OneCycleLR(o, {.max_lr = 0.1, .total_steps = 10, .pct_start = 1.5}), ValueError);
  EXPECT_THROW(OneCycleLR(o, {.max_lr = {0.1, 0.2, 0.3}, .total_steps = 10}), ValueError);
  Adagrad ada({r.params[0]});
  EXPECT_THROW(OneCycleLR(ada, {.max_lr = 0.1, .total_steps = 10}), ValueError);
  OneCycleLR short_cycle(ada, {.max_lr = 0.1, .total_steps = 3, .cycle_momentum = false});
  short_cycle.step();
  short_cycle.step();
  short_cycle.step();
  EXPECT_THROW(short_cycle.step(), ValueError);  // past total_steps
  StepLR other(ada, {.step_size = 1});
  StepLR mine(o, {.step_size = 1});
  EXPECT_THROW(SequentialLR(o, {mine, other}, {2}), ValueError);
  EXPECT_THROW(SequentialLR(o, {mine}, {2}), ValueError);
  EXPECT_THROW(ChainedScheduler({mine, other}), ValueError);
  EXPECT_THROW(ChainedScheduler({}), ValueError);
  ChainedScheduler chain({mine});
  EXPECT_THROW(chain.step(3.0), NotImplementedError);
  // Groups added after the scheduler was built: refused, never read out of bounds.
  ReduceLROnPlateau plateau(o);
  o.add_param_group({.params = {zeros({1}).requires_grad_()}});
  EXPECT_THROW(mine.step(), ValueError);
  EXPECT_THROW(mine.step(2.0), ValueError);
  EXPECT_THROW(plateau.step(1.0), ValueError);
  CosineAnnealingWarmRestarts warm(ada, {.T_0 = 2});
  ada.add_param_group({.params = {zeros({1}).requires_grad_()}});
  EXPECT_THROW(warm.step(), ValueError);
}

}  // namespace
}  // namespace ath::testing
