// The memory plan: exact bytes on small graphs, categories of a compiled training step, the
// overlap checker catching a broken plan, every workload's compiled step planned without two
// live buffers sharing a byte; and the debug page that draws the plan.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "athanor/athanor.h"
#include "athanor/graph/compile.h"
#include "athanor/graph/estimate_memory.h"
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

constexpr int64_t kBuf = 1000 * 4;  // an f32[1000]
constexpr int64_t kAligned = 4032;  // its slot: 4000 bytes rounded up to the 64-byte alignment

TEST(MemoryPlan, AChainReusesWhatDied) {
  // a = exp(x); b = x * a; c = x * b; d = x * c; return d.
  // a and b meet at node 1, b and c at 2; a is dead by then, so c takes a's bytes. (x * a, not
  // a * a: a mul writes its result over its first input where that dies, as the next test shows.)
  Graph g;
  const ValueId x = g.add_argument({{1000}, kFloat32});
  ValueId v = g.add_node(op_exp(), NoAttrs{}, {x})[0];
  for (int i = 0; i < 3; ++i) v = g.add_node(op_mul(), NoAttrs{}, {x, v})[0];
  g.outputs.push_back(v);
  const MemoryPlan plan = plan_memory(g);
  check_plan(g, plan);
  EXPECT_EQ(plan.buffers.size(), 3u);  // a, b, c; d is the output
  EXPECT_EQ(plan.arena_bytes, 2 * kAligned);
  EXPECT_EQ(plan.category_bytes(MemoryCategory::Activations), 3 * kBuf);
  EXPECT_EQ(plan.category_bytes(MemoryCategory::Outputs), kBuf);
  EXPECT_EQ(plan.category_bytes(MemoryCategory::Inputs), kBuf);
  EXPECT_EQ(plan.live_after_node, (std::vector<int64_t>{kBuf, 2 * kBuf, 2 * kBuf, kBuf}));
}

TEST(MemoryPlan, AnElementwiseResultIsWrittenOverTheInputThatDiesThere) {
  // a = exp(x); b = neg(a); c = exp(b); d = neg(c); return d. Each result's first input dies at
  // the node that makes it, and both ops may write over their input: a, b and c share one slot.
  Graph g;
  const ValueId x = g.add_argument({{1000}, kFloat32});
  std::vector<ValueId> v{x};
  for (int i = 0; i < 4; ++i)
    v.push_back(g.add_node(i % 2 ? op_neg() : op_exp(), NoAttrs{}, {v.back()})[0]);
  g.outputs.push_back(v.back());
  const MemoryPlan plan = plan_memory(g);
  check_plan(g, plan);
  ASSERT_EQ(plan.buffers.size(), 3u);
  EXPECT_EQ(plan.arena_bytes, kAligned);
  EXPECT_EQ(plan.live_after_node, (std::vector<int64_t>{kBuf, kBuf, kBuf, kBuf}));
  for (const MemoryPlan::Buffer& b : plan.buffers) {
    EXPECT_EQ(b.offset, 0);
    EXPECT_EQ(b.over, b.value == v[1] ? kNoValue : b.value - 1) << "%" << b.value;
  }
  const Tensor in = randn({1000});
  EXPECT_TRUE(equal(Executor(g, plan).run({in})[0], neg(exp(neg(exp(in))))));
}

TEST(MemoryPlan, BothOutputsOfAPairedOpAreWrittenOverTheirInputs) {
  // gelu_with_backward(g, x) -> (gradient, GELU) where g and x both die: the gradient takes g's
  // buffer and the GELU x's (InplacePolicy::EachOverItsInput), so the node adds no bytes.
  Graph g;
  const ValueId a = g.add_argument({{1000}, kFloat32});
  const ValueId b = g.add_argument({{1000}, kFloat32});
  const ValueId grad_in = g.add_node(op_exp(), NoAttrs{}, {a})[0];
  const ValueId x = g.add_node(op_neg(), NoAttrs{}, {b})[0];
  const std::vector<ValueId> out = g.add_node(op_gelu_with_backward(), GeluAttrs{}, {grad_in, x});
  g.outputs = {g.add_node(op_add(), AlphaAttrs{}, {out[0], out[1]})[0]};
  const MemoryPlan plan = plan_memory(g);
  check_plan(g, plan);
  for (const MemoryPlan::Buffer& buf : plan.buffers) {
    if (buf.value == out[0]) {
      EXPECT_EQ(buf.over, grad_in);
    }
    if (buf.value == out[1]) {
      EXPECT_EQ(buf.over, x);
    }
  }
  EXPECT_EQ(plan.arena_bytes, 2 * kAligned);
  const Tensor av = randn({1000}), bv = randn({1000});
  const Tensor gv = exp(av), xv = neg(bv);
  EXPECT_TRUE(equal(Executor(g, plan).run({av, bv})[0],
                    call1(op_gelu_backward(), {gv, xv}, GeluAttrs{}) + gelu(xv)));

  // With one value as both inputs, only one output may take its buffer.
  Graph h;
  const ValueId c = h.add_argument({{1000}, kFloat32});
  const ValueId y = h.add_node(op_exp(), NoAttrs{}, {c})[0];
  const std::vector<ValueId> both = h.add_node(op_gelu_with_backward(), GeluAttrs{}, {y, y});
  h.outputs = {h.add_node(op_add(), AlphaAttrs{}, {both[0], both[1]})[0]};
  const MemoryPlan shared = plan_memory(h);
  check_plan(h, shared);
  int over_y = 0;
  for (const MemoryPlan::Buffer& buf : shared.buffers) over_y += buf.over == y ? 1 : 0;
  EXPECT_EQ(over_y, 1);
  const Tensor yv = exp(av);
  EXPECT_TRUE(equal(Executor(h, shared).run({av})[0],
                    call1(op_gelu_backward(), {yv, yv}, GeluAttrs{}) + gelu(yv)));
}

TEST(MemoryPlan, NothingIsWrittenOverABufferSomethingElseStillReads) {
  Graph g;
  const ValueId x = g.add_argument({{32, 32}, kFloat32});
  // a is read again after the sin: the sin gets a buffer of its own.
  const ValueId a = g.add_node(op_exp(), NoAttrs{}, {x})[0];
  const ValueId b = g.add_node(op_sin(), NoAttrs{}, {a})[0];
  const ValueId c = g.add_node(op_add(), AlphaAttrs{}, {a, b})[0];
  // c dies at the add that also reads it transposed: writing over c would change that read.
  const ValueId ct = g.add_node(op_permute(), PermuteAttrs{.dims = {1, 0}}, {c})[0];
  const ValueId e = g.add_node(op_add(), AlphaAttrs{}, {c, ct})[0];
  // e dies at two nodes that run together: neither may write over it while the other reads it.
  const ValueId f = g.add_node(op_exp(), NoAttrs{}, {e})[0];
  const ValueId h = g.add_node(op_neg(), NoAttrs{}, {e})[0];
  g.outputs = {g.add_node(op_mul(), NoAttrs{}, {f, h})[0]};
  const std::vector<int32_t> pairs{g.value(f).node};
  const MemoryPlan plan = plan_memory(g, pairs);
  check_plan(g, plan);
  for (const MemoryPlan::Buffer& buf : plan.buffers) {
    if (buf.value == b || buf.value == e || buf.value == f || buf.value == h) {
      EXPECT_EQ(buf.over, kNoValue) << "%" << buf.value << " written over %" << buf.over;
    }
  }
  const Tensor in = randn({32, 32});
  const Tensor cv = exp(in) + sin(exp(in));
  const Tensor ev = cv + cv.t();
  EXPECT_TRUE(equal(Executor(g, plan, pairs).run({in})[0], exp(ev) * neg(ev)));
}

TEST(MemoryPlan, ViewsAndVersionsExtendTheirBuffersLife) {
  // a = exp(x); t = a viewed as [10, 100]; y = neg(x); z = exp(t) -> a lives to node 3.
  Graph g;
  const ValueId x = g.add_argument({{1000}, kFloat32});
  const ValueId a = g.add_node(op_exp(), NoAttrs{}, {x})[0];
  const ValueId t = g.add_node(op_view(), ShapeAttrs{.shape = {10, 100}}, {a})[0];
  const ValueId y = g.add_node(op_neg(), NoAttrs{}, {x})[0];
  g.outputs.push_back(g.add_node(op_exp(), NoAttrs{}, {t})[0]);
  g.outputs.push_back(y);
  const MemoryPlan plan = plan_memory(g);
  check_plan(g, plan);
  ASSERT_EQ(plan.buffers.size(), 1u);  // a (t is a view of it; y and the exp are outputs)
  EXPECT_EQ(plan.buffers[0].first, 0);
  EXPECT_EQ(plan.buffers[0].last, 3);
}

TEST(MemoryPlan, TheCheckerNamesOverlappingLiveBuffers) {
  Graph g;
  const ValueId x = g.add_argument({{1000}, kFloat32});
  const ValueId a = g.add_node(op_exp(), NoAttrs{}, {x})[0];
  const ValueId b = g.add_node(op_neg(), NoAttrs{}, {a})[0];
  g.outputs.push_back(g.add_node(op_add(), AlphaAttrs{}, {a, b})[0]);
  MemoryPlan plan = plan_memory(g);
  check_plan(g, plan);
  ASSERT_EQ(plan.buffers.size(), 2u);
  plan.buffers[1].offset = plan.buffers[0].offset + 8;
  testing::expect_error_naming([&] { check_plan(g, plan); }, "are live at once and overlap");
  plan.buffers[1].offset = plan.arena_bytes;
  testing::expect_error_naming([&] { check_plan(g, plan); }, "lies outside the arena");
}

template <class Model, class Opt>
const MemoryPlan& plan_of_training(
    Model& model, Opt& opt, const Tensor& x, const Tensor& y,
    std::optional<Compiled<std::function<Tensor(const Tensor&, const Tensor&)>>>& holder) {
  std::function<Tensor(const Tensor&, const Tensor&)> step =
      test_util::classification_step(model, opt);
  holder.emplace(step, CompileOptions{});       // verify (default): check_plan on every graph
  for (int i = 0; i < 4; ++i) (*holder)(x, y);  // state made at call 1: calls 2, 3 agree
  EXPECT_EQ(holder->stats().replays, 1);
  return *holder->memory_plan();
}

int64_t parameter_bytes(nn::Module& m) {
  int64_t b = 0;
  for (const Tensor& p : m.parameters()) b += p.numel() * 4;
  return b;
}

TEST(MemoryPlan, ACompiledAdamStepCountsEachCategory) {
  manual_seed(0);
  auto model = models::fashion_mlp();
  optim::Adam opt(model->parameters(), {.lr = 1e-3});
  std::optional<Compiled<std::function<Tensor(const Tensor&, const Tensor&)>>> holder;
  const MemoryPlan& plan =
      plan_of_training(*model, opt, randn({32, 1, 28, 28}), randint(0, 10, {32}), holder);
  const int64_t params = parameter_bytes(*model);
  EXPECT_EQ(plan.category_bytes(MemoryCategory::Parameters), params);
  EXPECT_EQ(plan.category_bytes(MemoryCategory::Gradients), params);
  // Adam: two moments per parameter, and its step counters.
  EXPECT_GE(plan.category_bytes(MemoryCategory::OptimizerState), 2 * params);
  EXPECT_LT(plan.category_bytes(MemoryCategory::OptimizerState), 2 * params + 4096);
  EXPECT_GT(plan.arena_bytes, 0);
  EXPECT_LE(plan.arena_bytes, plan.category_bytes(MemoryCategory::Activations) +
                                  plan.category_bytes(MemoryCategory::Workspace) + 64 * 64);
  EXPECT_NE(plan.report().find("optimizer state"), std::string::npos);
}

// Every workload's model, compiled on a small batch: the plan is checked for overlaps (compile's
// verify), and reuse makes the arena smaller than the sum of its buffers.
TEST(MemoryPlan, EveryWorkloadStepIsPlannedWithoutOverlaps) {
  struct Case {
    std::string name;
    std::shared_ptr<nn::Module> model;
    Tensor x, y;
  };
  manual_seed(1);
  std::vector<Case> cases;
  cases.push_back({"W1", models::fashion_mlp(), randn({8, 1, 28, 28}), randint(0, 10, {8})});
  cases.push_back({"W2", models::fashion_cnn(), randn({4, 1, 28, 28}), randint(0, 10, {4})});
  cases.push_back({"W3", std::make_shared<models::CharLstm>(), randint(0, 256, {2, 16}),
                   randint(0, 256, {2, 16})});
  cases.push_back({"W4", std::make_shared<models::CharTransformer>(), randint(0, 256, {2, 16}),
                   randint(0, 256, {2, 16})});
  for (Case& c : cases) {
    SCOPED_TRACE(c.name);
    optim::SGD opt(c.model->parameters(), {.lr = 0.01, .momentum = 0.9});
    std::optional<Compiled<std::function<Tensor(const Tensor&, const Tensor&)>>> holder;
    const MemoryPlan& plan = plan_of_training(*c.model, opt, c.x, c.y, holder);
    EXPECT_GT(plan.buffers.size(), 5u);
    EXPECT_LT(plan.arena_bytes, plan.category_bytes(MemoryCategory::Activations) +
                                    plan.category_bytes(MemoryCategory::Workspace));
    EXPECT_EQ(plan.category_bytes(MemoryCategory::Parameters), parameter_bytes(*c.model));
  }
}

// estimate_memory traces once what compile() traces twice: the same plan, and it grows with
// the batch.
TEST(EstimateMemory, EqualsTheCompiledStepsPlanAndGrowsWithTheBatch) {
  manual_seed(2);
  auto model = models::fashion_cnn();
  optim::SGD opt(model->parameters(), {.lr = 0.01, .momentum = 0.9});
  auto step = test_util::classification_step(*model, opt);
  const Tensor x = randn({4, 1, 28, 28}), y = randint(0, 10, {4});
  step(x, y);  // the momentum buffers exist: state, in both plans
  const MemoryPlan estimate = estimate_memory(step, x, y);
  auto compiled_step = compile(step);
  for (int i = 0; i < 3; ++i) compiled_step(x, y);  // trace, trace, replay
  ASSERT_EQ(compiled_step.stats().replays, 1);
  const MemoryPlan& compiled = *compiled_step.memory_plan();
  EXPECT_EQ(estimate.arena_bytes, compiled.arena_bytes);
  EXPECT_EQ(estimate.total_bytes(), compiled.total_bytes());
  const MemoryPlan larger = estimate_memory(step, randn({8, 1, 28, 28}), randint(0, 10, {8}));
  EXPECT_GT(larger.arena_bytes, estimate.arena_bytes);
  EXPECT_EQ(larger.category_bytes(MemoryCategory::Parameters),
            estimate.category_bytes(MemoryCategory::Parameters));
  testing::expect_error_naming(
      [&] { estimate_memory([](const data::Batch&) {}, data::Batch(42, 1)); },
      "estimate_memory: the batch is not a TensorList");
}

}  // namespace
}  // namespace ath::graph

namespace ath::graph {
namespace {

TEST(CompileDebug, WritesEachStageAndAPageWithTheArenaPicture) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / fmt::format("ath_compile_debug_{}", ::getpid());
  std::filesystem::remove_all(dir);
  manual_seed(2);
  auto model = models::fashion_cnn();
  optim::SGD opt(model->parameters(), {.lr = 0.01});
  auto step = compile(test_util::classification_step(*model, opt), {.debug_dir = dir.string()});
  const Tensor x = randn({2, 1, 28, 28}), y = randint(0, 10, {2});
  for (int i = 0; i < 3; ++i) step(x, y);
  ASSERT_EQ(step.stats().replays, 1);
  const std::filesystem::path graph_dir = dir / "graph0";
  for (const char* f : {"0_traced.txt", "9_fuse.txt", "10_dce.dot", "memory_plan.txt"})
    EXPECT_TRUE(std::filesystem::exists(graph_dir / f)) << f;
  std::ifstream in(graph_dir / "index.html");
  const std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(page.find("<svg"), std::string::npos);
  EXPECT_EQ(page.find("<li>none</li>"), std::string::npos);  // W2's ReLU backwards are listed
  EXPECT_NE(page.find("r4=to_float(r3)"), std::string::npos);
  EXPECT_NE(page.find("<summary>9_fuse</summary>"), std::string::npos);
  // A buffer's tooltip (node 0: the first convolution, ReLU and pool, "conv_pool_train").
  EXPECT_NE(page.find("(conv_relu_max_pool_indices): nodes 0.."), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ath::graph
