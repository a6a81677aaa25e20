// The executor running a graph in its memory plan's arena: every planned buffer is an arena
// slice (counted exactly against a run without the arena), results are bit-identical to eager
// execution and to the arena-less replay for every workload's training step, in-place writes
// go straight into their target, and a buffer that does not match the shape rule is refused.
#include <gtest/gtest.h>

#include <functional>
#include <optional>

#include "athanor/athanor.h"
#include "athanor/graph/compile.h"
#include "athanor/graph/executor.h"
#include "athanor/graph/memory_plan.h"
#include "athanor/graph/tracer.h"
#include "athanor/models/char_lstm.h"
#include "athanor/models/char_transformer.h"
#include "athanor/models/fashion.h"
#include "athanor/optim/adam.h"
#include "athanor/optim/sgd.h"
#include "graph_test_util.h"
#include "support/expect_error.h"

namespace ath::graph {
namespace {

int64_t allocations() { return memory_stats().allocations; }

TEST(ArenaExecutor, PlannedBuffersComeFromTheArenaAndNothingElseChanges) {
  // a = exp(x); b = neg(a); c = a * b; return exp(c): a, b, c are planned, the result is not.
  Graph g;
  const ValueId x = g.add_argument({{1000}, kFloat32});
  const ValueId a = g.add_node(op_exp(), NoAttrs{}, {x})[0];
  const ValueId b = g.add_node(op_neg(), NoAttrs{}, {a})[0];
  const ValueId c = g.add_node(op_mul(), NoAttrs{}, {a, b})[0];
  g.outputs.push_back(g.add_node(op_exp(), NoAttrs{}, {c})[0]);
  const MemoryPlan plan = plan_memory(g);
  ASSERT_EQ(plan.buffers.size(), 3u);

  Executor with_arena(g, plan), without(g);
  EXPECT_EQ(with_arena.arena_bytes(), plan.arena_bytes);
  EXPECT_FALSE(with_arena.arena_allocated());  // allocated by the first run, not before
  const Tensor input = randn({1000}) * 0.1;
  const Tensor expected = exp(exp(input) * neg(exp(input)));
  with_arena.run({input});
  ASSERT_TRUE(with_arena.arena_allocated());

  const int64_t before_plain = allocations();
  const std::vector<Tensor> plain = without.run({input});
  const int64_t plain_allocations = allocations() - before_plain;
  const int64_t before_arena = allocations();
  const std::vector<Tensor> planned = with_arena.run({input});
  const int64_t arena_allocations = allocations() - before_arena;

  EXPECT_TRUE(equal(planned[0], expected));
  EXPECT_TRUE(equal(plain[0], expected));
  EXPECT_TRUE(with_arena.last_run().used_arena);
  EXPECT_EQ(with_arena.last_run().arena_buffers, 3);
  EXPECT_EQ(with_arena.last_run().allocated_buffers, 1);  // the output
  EXPECT_EQ(plain_allocations - arena_allocations, 3);
  EXPECT_FALSE(without.last_run().used_arena);
  EXPECT_EQ(without.last_run().allocated_buffers, 4);

  // Released (before an evaluation, say), the arena comes back at the next run.
  with_arena.release_arena();
  EXPECT_FALSE(with_arena.arena_allocated());
  EXPECT_TRUE(equal(with_arena.run({input})[0], expected));
  EXPECT_TRUE(with_arena.arena_allocated());
}

// The traces run eagerly, and the caching allocator keeps their freed blocks; the arena replaces
// them. Handed back when the graph is prepared (before the passes and the rate calibration
// allocate), they never add to the process's peak beside what comes next.
TEST(ArenaExecutor, PreparingAGraphHandsBackWhatTheTracesCached) {
  auto f = compile([](const Tensor& x) { return (exp(x) * 2.0).sum(); },
                   {.disable_passes = {"interop"}});
  const Tensor x = randn({1 << 20});  // exp(x) and its product: 4 MB each, freed into the cache
  f(x);
  ASSERT_GE(memory_stats().cached_bytes, int64_t{4} << 20);  // what an eager run leaves
  f(x);  // the trace that matches the last one: the graph is prepared
  ASSERT_EQ(f.stats().graphs, 1);
  EXPECT_LT(memory_stats().cached_bytes, int64_t{4} << 20);
  EXPECT_FLOAT_EQ(f(x).item<float>(), (exp(x) * 2.0).sum().item<float>());
}

TEST(ArenaExecutor, InPlaceWritesGoIntoTheirTargetAndAliasedOnesStillAgree) {
  // a = exp(x); a += y; a += a (its own alias: computed, then copied in); return a * a.
  Graph g;
  const ValueId x = g.add_argument({{257}, kFloat32});
  const ValueId y = g.add_argument({{257}, kFloat32});
  ValueId a = g.add_node(op_exp(), NoAttrs{}, {x})[0];
  a = test_util::add_into(g, a, y);
  a = test_util::add_into(g, a, a);
  g.outputs.push_back(g.add_node(op_mul(), NoAttrs{}, {a, a})[0]);
  const MemoryPlan plan = plan_memory(g);
  check_plan(g, plan);
  Executor exec(g, plan);
  const Tensor xs = randn({257}), ys = randn({257});
  for (int run = 0; run < 2; ++run) {
    const Tensor doubled = (exp(xs) + ys) * 2.0;
    const Tensor expected = doubled * doubled;
    EXPECT_TRUE(equal(exec.run({xs, ys})[0], expected));
  }
}

TEST(ArenaExecutor, ABufferThatDoesNotMatchTheShapeRuleIsRefusedByName) {
  const Tensor a = randn({4, 3}), b = randn({4, 3});
  const AlphaAttrs alpha{};
  std::vector<Tensor> wrong{empty({3, 4})};
  testing::expect_error_naming(
      [&] {
        op_add().run_into(std::vector<Tensor>{a, b}, wrong, &alpha, {});
      },
      "add: the shape rule makes output 0 a contiguous float32 [4, 3]");
  std::vector<Tensor> strided{empty({3, 4}).t()};
  testing::expect_error_naming(
      [&] {
        op_add().run_into(std::vector<Tensor>{a, b}, strided, &alpha, {});
      },
      "(strided)");
  std::vector<Tensor> none;
  testing::expect_error_naming(
      [&] {
        op_add().run_into(std::vector<Tensor>{a, b}, none, &alpha, {});
      },
      "the op makes 1 outputs, 0 buffers were provided");
  std::vector<Tensor> right{empty({4, 3})};
  op_add().run_into(std::vector<Tensor>{a, b}, right, &alpha, {});
  EXPECT_TRUE(equal(right[0], a + b));
}

using Step = std::function<Tensor(const Tensor&, const Tensor&)>;

struct Workload {
  std::string name;
  std::function<std::shared_ptr<nn::Module>()> make;
  std::function<std::pair<Tensor, Tensor>()> batch;
};

std::vector<Workload> workloads() {
  return {
      {"W1", [] { return models::fashion_mlp(); },
       [] {
         return std::pair{randn({16, 1, 28, 28}), randint(0, 10, {16})};
       }},
      {"W2", [] { return models::fashion_cnn(); },
       [] {
         return std::pair{randn({4, 1, 28, 28}), randint(0, 10, {4})};
       }},
      {"W3", [] { return std::make_shared<models::CharLstm>(); },
       [] {
         return std::pair{randint(0, 256, {2, 12}), randint(0, 256, {2, 12})};
       }},
      {"W4", [] { return std::make_shared<models::CharTransformer>(); },
       [] {
         return std::pair{randint(0, 256, {2, 12}), randint(0, 256, {2, 12})};
       }},
  };
}

// Six AdamW steps of a workload's model: eagerly, compiled with the arena, compiled without.
// All three give bit-identical losses and parameters; the arena replays allocate exactly the
// planned buffers fewer than the arena-less ones.
TEST(ArenaExecutor, EveryWorkloadTrainsBitIdenticallyInItsArena) {
  for (const Workload& w : workloads()) {
    SCOPED_TRACE(w.name);
    manual_seed(7);
    std::vector<std::pair<Tensor, Tensor>> batches;
    for (int i = 0; i < 6; ++i) batches.push_back(w.batch());
    struct Run {
      std::vector<float> losses;
      std::vector<Tensor> params;
      std::vector<int64_t> step_allocations;
      int64_t arena_buffers = -1;
    };
    auto train = [&](int mode) {  // 0 eager, 1 compiled with the arena, 2 without
      manual_seed(3);
      auto model = w.make();
      optim::AdamW opt(model->parameters(), {.lr = 1e-3});
      Step eager = test_util::classification_step(*model, opt);
      std::optional<Compiled<Step>> compiled;
      if (mode > 0) compiled.emplace(eager, CompileOptions{.arena = mode == 1});
      Run r;
      for (const auto& [x, y] : batches) {
        const int64_t before = allocations();
        const Tensor loss = mode == 0 ? eager(x, y) : (*compiled)(x, y);
        r.step_allocations.push_back(allocations() - before);
        r.losses.push_back(loss.item<float>());
      }
      if (mode > 0) {
        EXPECT_EQ(compiled->stats().replays, 3);  // AdamW makes its state at call 1
        const Executor* exec = compiled->executor();
        EXPECT_EQ(exec->last_run().used_arena, mode == 1);
        if (mode == 1) {
          r.arena_buffers = exec->last_run().arena_buffers;
          EXPECT_GE(r.arena_buffers, 8);
          EXPECT_EQ(exec->arena_bytes(), compiled->memory_plan()->arena_bytes);
          compiled->release_memory();
          EXPECT_FALSE(exec->arena_allocated());
        }
      }
      for (const Tensor& p : model->parameters()) r.params.push_back(p.clone());
      return r;
    };
    const Run eager = train(0), arena = train(1), plain = train(2);
    EXPECT_EQ(arena.losses, eager.losses);
    EXPECT_EQ(plain.losses, eager.losses);
    for (std::size_t i = 0; i < eager.params.size(); ++i) {
      EXPECT_TRUE(equal(arena.params[i], eager.params[i])) << "parameter " << i;
      EXPECT_TRUE(equal(plain.params[i], eager.params[i])) << "parameter " << i;
    }
    // The last step of each replayed run: the difference is the arena's buffers, exactly.
    EXPECT_EQ(plain.step_allocations.back() - arena.step_allocations.back(), arena.arena_buffers);
  }
}

}  // namespace
}  // namespace ath::graph
