// Rematerialization under a memory budget: which buffers it recomputes (and which it must not),
// that the arena shrinks and the rewritten graph computes the same bits, views over a recomputed
// buffer, chains of recomputed producers, and whole training steps under half their unbudgeted
// arena that train bit-identically to eager execution: W4, which fits, and W2, which cannot (its
// saved activations come from convolutions whose inputs are gone) and says so once.
#include <gtest/gtest.h>

#include <functional>
#include <optional>

#include "athanor/athanor.h"
#include "athanor/graph/compile.h"
#include "athanor/graph/executor.h"
#include "athanor/graph/memory_plan.h"
#include "athanor/graph/passes.h"
#include "athanor/graph/verify.h"
#include "athanor/models/char_transformer.h"
#include "athanor/models/fashion.h"
#include "athanor/optim/adam.h"
#include "graph_test_util.h"

namespace ath::graph {
namespace {

constexpr int64_t kN = 1000;

// a = exp(src); b = neg(a); c = sin(b); d = c * b; out = d * a. Three buffers are live at d
// (a, b, and c, which d is written over in place): the peak; `a` is live across it only for the
// last multiply. src is the argument, or `cosines` nested cos() of it (each dead once the next
// has read it).
Graph peak_between_uses(int cosines = 0) {
  Graph g;
  ValueId src = g.add_argument({{kN}, kFloat32});
  for (int i = 0; i < cosines; ++i) src = g.add_node(op_cos(), NoAttrs{}, {src})[0];
  const ValueId a = g.add_node(op_exp(), NoAttrs{}, {src})[0];
  const ValueId b = g.add_node(op_neg(), NoAttrs{}, {a})[0];
  const ValueId c = g.add_node(op_sin(), NoAttrs{}, {b})[0];
  const ValueId d = g.add_node(op_mul(), NoAttrs{}, {c, b})[0];
  g.outputs.push_back(g.add_node(op_mul(), NoAttrs{}, {d, a})[0]);
  return g;
}

Tensor run_graph(const Graph& g, const Tensor& input) {
  Executor exec(g, plan_memory(g));
  return exec.run({input})[0];
}

TEST(Remat, RecomputesAnActivationAtItsLateReadWhenItsInputIsStillThere) {
  Graph g = peak_between_uses();
  const Tensor input = randn({kN});
  const Tensor expected = run_graph(g, input);
  const int64_t before = plan_memory(g).arena_bytes;

  const RematReport r = rematerialize(g, before - 1);
  verify(g);
  ASSERT_EQ(r.recomputed.size(), 1u);
  EXPECT_EQ(r.recomputed[0].op, "exp");
  EXPECT_EQ(r.recomputed[0].type, "f32[1000]");
  EXPECT_EQ(r.recomputed[0].bytes, kN * 4);
  EXPECT_EQ(r.arena_before, before);
  EXPECT_LT(r.arena_after, before);
  EXPECT_TRUE(r.met(before - 1));
  EXPECT_EQ(plan_memory(g).arena_bytes, r.arena_after);
  EXPECT_EQ(g.count("exp"), 2);  // the forward's, for neg; the copy, for the last multiply
  const std::string text = g.to_text();
  EXPECT_NE(text.find("  %5 = exp(%0) f32[1000]\n  %6 = mul(%4, %5) f32[1000]"), std::string::npos)
      << text;
  EXPECT_TRUE(equal(run_graph(g, input), expected));
}

// Without a budget: `a` = exp(x) is recomputed at the last multiply, since x is still there (an
// argument); the arena comes down from three buffers to two.
TEST(Remat, TheFreeModeRecomputesWhatItsStillLiveInputsGive) {
  Graph g = peak_between_uses();
  const Tensor input = randn({kN});
  const Tensor expected = run_graph(g, input);
  const int64_t before = plan_memory(g).arena_bytes;
  const RematReport r = rematerialize_free(g);
  verify(g);
  ASSERT_EQ(r.recomputed.size(), 1u);
  EXPECT_EQ(r.recomputed[0].op, "exp");
  EXPECT_EQ(r.arena_before, before);
  EXPECT_EQ(r.arena_after, plan_memory(g).arena_bytes);
  EXPECT_LT(r.arena_after, before);
  EXPECT_TRUE(equal(run_graph(g, input), expected));
}

// ...but not where that would take a chain: exp's input, cos(x), is gone by then.
TEST(Remat, TheFreeModeLeavesWhatWouldTakeAChain) {
  Graph g = peak_between_uses(1);
  const std::string before = g.to_text();
  const RematReport r = rematerialize_free(g);
  EXPECT_TRUE(r.recomputed.empty());
  EXPECT_EQ(r.arena_after, r.arena_before);
  EXPECT_EQ(g.to_text(), before);
}

TEST(Remat, RecomputesAChainOfProducersWhoseInputsAreGone) {
  // exp's input (cos(cos(x))) is gone at the last multiply: both cosines are recomputed too.
  Graph g = peak_between_uses(2);
  const Tensor input = randn({kN});
  const Tensor expected = run_graph(g, input);
  const int64_t before = plan_memory(g).arena_bytes;
  const RematReport r = rematerialize(g, before - 1);
  verify(g);
  ASSERT_EQ(r.recomputed.size(), 1u);
  EXPECT_EQ(r.recomputed[0].op, "cos+cos+exp");
  EXPECT_LT(r.arena_after, before);
  EXPECT_EQ(g.count("cos"), 4);
  EXPECT_TRUE(equal(run_graph(g, input), expected));
}

TEST(Remat, LeavesABufferTooFarFromAvailableValuesAndSaysTheBudgetWasMissed) {
  Graph g = peak_between_uses(5);  // a chain of six nodes: longer than a recomputation may be
  const std::string before_text = g.to_text();
  const int64_t before = plan_memory(g).arena_bytes;
  const RematReport r = rematerialize(g, before / 2);
  EXPECT_TRUE(r.recomputed.empty());
  EXPECT_FALSE(r.met(before / 2));
  EXPECT_EQ(r.arena_after, before);
  EXPECT_EQ(g.to_text(), before_text);
}

TEST(Remat, ABudgetAlreadyMetChangesNothing) {
  Graph g = peak_between_uses();
  const std::string before_text = g.to_text();
  const RematReport r = rematerialize(g, plan_memory(g).arena_bytes);
  EXPECT_TRUE(r.recomputed.empty());
  EXPECT_EQ(g.to_text(), before_text);
}

TEST(Remat, ViewsOfTheRecomputedBufferAreReplayedOverTheCopy) {
  // As peak_between_uses, but the last multiply reads `a` through a view made right after it.
  Graph g;
  const ValueId x = g.add_argument({{10, 100}, kFloat32});
  const ValueId a = g.add_node(op_exp(), NoAttrs{}, {x})[0];
  const ValueId flat = g.add_node(op_view(), ShapeAttrs{{kN}}, {a})[0];
  const ValueId b = g.add_node(op_neg(), NoAttrs{}, {flat})[0];
  const ValueId c = g.add_node(op_sin(), NoAttrs{}, {b})[0];
  const ValueId d = g.add_node(op_mul(), NoAttrs{}, {c, b})[0];
  g.outputs.push_back(g.add_node(op_mul(), NoAttrs{}, {d, flat})[0]);
  const Tensor input = randn({10, 100});
  const Tensor expected = run_graph(g, input);
  const int64_t before = plan_memory(g).arena_bytes;

  const RematReport r = rematerialize(g, before - 1);
  verify(g);
  ASSERT_EQ(r.recomputed.size(), 1u);
  EXPECT_LT(r.arena_after, before);
  EXPECT_EQ(g.count("exp"), 2);
  EXPECT_EQ(g.count("view"), 2);  // the copy's own view
  EXPECT_TRUE(equal(run_graph(g, input), expected));
}

using Step = std::function<Tensor(const Tensor&, const Tensor&)>;

// Six AdamW steps eagerly and compiled under half the arena that recomputes nothing: the same
// losses and parameters, bit for bit; the plan recomputes something and its arena is smaller.
// Without a budget, only the free recomputations (rematerialize_free): bit-identical too.
void expect_trains_identically_under_half_budget(
    const std::function<std::shared_ptr<nn::Module>()>& make,
    const std::function<std::pair<Tensor, Tensor>()>& batch, bool expect_budget_met,
    std::vector<std::string> disable_passes = {}) {
  manual_seed(7);
  std::vector<std::pair<Tensor, Tensor>> batches;
  for (int i = 0; i < 6; ++i) batches.push_back(batch());
  struct Run {
    std::vector<float> losses;
    std::vector<Tensor> params;
    MemoryPlan plan;
  };
  auto train = [&](std::optional<int64_t> budget, bool recompute = true) {
    manual_seed(3);
    auto model = make();
    optim::AdamW opt(model->parameters(), {.lr = 1e-3});
    Step eager = test_util::classification_step(*model, opt);
    std::optional<Compiled<Step>> compiled;
    std::vector<std::string> diagnostics;
    if (budget) {
      std::vector<std::string> disabled = disable_passes;
      if (!recompute) disabled.emplace_back("remat");
      compiled.emplace(eager, CompileOptions{.disable_passes = disabled,
                                             .memory_budget = *budget,
                                             .on_diagnostic = [&](const std::string& d) {
                                               diagnostics.push_back(d);
                                             }});
    }
    Run r;
    for (const auto& [x, y] : batches)
      r.losses.push_back((compiled ? (*compiled)(x, y) : eager(x, y)).item<float>());
    if (compiled) {
      EXPECT_EQ(compiled->stats().replays, 3);
      r.plan = *compiled->memory_plan();
      // A missed budget says so, once.
      EXPECT_EQ(diagnostics.size(), r.plan.arena_bytes > *budget ? 1u : 0u)
          << testing::PrintToString(diagnostics);
    }
    for (const Tensor& p : model->parameters()) r.params.push_back(p.clone());
    return r;
  };
  // The plan that recomputes nothing, from a compiled run with a budget nothing exceeds and
  // "remat" off; with it on, only what costs no memory elsewhere; under half, more.
  const Run unbudgeted = train(int64_t{1} << 50, /*recompute=*/false);
  EXPECT_TRUE(unbudgeted.plan.recomputed.empty());
  const int64_t half = unbudgeted.plan.arena_bytes / 2;
  const Run eager = train(std::nullopt), free = train(int64_t{1} << 50), budgeted = train(half);
  EXPECT_LE(free.plan.arena_bytes, unbudgeted.plan.arena_bytes);
  EXPECT_GT(budgeted.plan.recomputed.size(), free.plan.recomputed.size());
  EXPECT_EQ(free.losses, eager.losses);
  EXPECT_LT(budgeted.plan.arena_bytes, unbudgeted.plan.arena_bytes);
  if (expect_budget_met) {
    EXPECT_LE(budgeted.plan.arena_bytes, half);
  }
  EXPECT_EQ(budgeted.losses, eager.losses);
  EXPECT_EQ(unbudgeted.losses, eager.losses);
  for (std::size_t i = 0; i < eager.params.size(); ++i)
    EXPECT_TRUE(equal(budgeted.params[i], eager.params[i])) << "parameter " << i;
}

TEST(Remat, W4TrainsBitIdenticallyUnderHalfItsArena) {
  expect_trains_identically_under_half_budget(
      [] { return std::make_shared<models::CharTransformer>(); },
      [] {
        return std::pair{randint(0, 256, {8, 64}), randint(0, 256, {8, 64})};
      },
      true);
}

TEST(Remat, W2TrainsBitIdenticallyUnderABudget) {
  expect_trains_identically_under_half_budget(
      [] { return models::fashion_cnn(); },
      [] {
        return std::pair{randn({4, 1, 28, 28}), randint(0, 10, {4})};
      },
      false,
      // With pool_mask the backward no longer keeps the conv outputs (the masks read the pooled
      // values), W2's arena shrinks by 43% and nothing at its peak is recomputable; without it
      // remat has the conv -> relu chains to recompute, which is what this test exercises.
      {"pool_mask"});
}

}  // namespace
}  // namespace ath::graph
