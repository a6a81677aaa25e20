// The inter-op schedule (graph/interop.h): the dependency analysis on hand-built graphs, the
// reorder that brings a pair together, the memory plan that keeps a pair's buffers apart, the
// cost model refusing pairs that lose, kernels inside a pair running on one thread with the same
// bits, and W2's and W4's compiled steps with every candidate paired, bit-identical to eager.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "athanor/athanor.h"
#include "athanor/graph/compile.h"
#include "athanor/graph/executor.h"
#include "athanor/graph/interop.h"
#include "athanor/graph/memory_plan.h"
#include "athanor/graph/passes.h"
#include "athanor/graph/verify.h"
#include "athanor/models/char_transformer.h"
#include "athanor/models/fashion.h"
#include "athanor/ops/attention.h"
#include "athanor/ops/conv_pool.h"
#include "athanor/ops/rnn_cells.h"
#include "athanor/optim/adam.h"
#include "graph_test_util.h"

namespace ath::graph {
namespace {

std::vector<uint32_t> bits(const Tensor& t) {
  const std::vector<float> v = t.to(kFloat32).contiguous().to_vector<float>();
  std::vector<uint32_t> b(v.size());
  if (!v.empty()) std::memcpy(b.data(), v.data(), v.size() * sizeof(float));
  return b;
}

// Costs under which every independent candidate pairs (a margin no pair can miss).
InteropOptions pair_everything() { return {.costs = {.margin = -100.0, .threads = 2}}; }

TEST(InteropDeps, IndependentReadersPairAndRunTogether) {
  Graph g;
  const ValueId x = g.add_argument({{3000}, kFloat32});
  const ValueId a = g.add_node(op_exp(), NoAttrs{}, {x})[0];
  const ValueId b = g.add_node(op_neg(), NoAttrs{}, {x})[0];
  g.outputs = {a, b};
  EXPECT_FALSE(must_follow(g, 0, 1));
  const InteropSchedule s = schedule_interop(g, pair_everything());
  ASSERT_EQ(s.pairs.size(), 1u);
  EXPECT_EQ(s.pairs[0].first, 0);
  EXPECT_EQ(s.moved, 0);
  verify(g);
  const std::vector<int32_t> pairs = s.paired_first();
  Executor exec(g, plan_memory(g, pairs), pairs);
  const Tensor in = randn({3000});
  const std::vector<Tensor> out = exec.run({in});
  EXPECT_EQ(bits(out[0]), bits(exp(in)));
  EXPECT_EQ(bits(out[1]), bits(-in));
  EXPECT_EQ(exec.last_run().pairs, 1);
}

TEST(InteropDeps, AWriteBetweenTwoReadersForbidsPairing) {
  for (const bool reads_new_version : {true, false}) {
    Graph g;
    const ValueId x = g.add_argument({{8}, kFloat32});
    const ValueId p = g.add_state(zeros({8}));
    const ValueId r1 = g.add_node(op_exp(), NoAttrs{}, {p})[0];
    const ValueId p2 = test_util::add_into(g, p, x);
    const ValueId r2 = g.add_node(op_neg(), NoAttrs{}, {reads_new_version ? p2 : p})[0];
    g.outputs = {r1, r2};
    verify(g);
    EXPECT_TRUE(must_follow(g, 0, 1));  // the write changes what the first reader read
    EXPECT_TRUE(must_follow(g, 1, 2));  // the second reader reads what the write made
    EXPECT_FALSE(can_pair(g.nodes[1]));
    const std::string before = g.to_text();
    const InteropSchedule s = schedule_interop(g, pair_everything());
    EXPECT_TRUE(s.pairs.empty());
    EXPECT_EQ(s.candidates, 0);
    EXPECT_EQ(g.to_text(), before);
  }
}

TEST(InteropDeps, DataDependenciesAndRandomDrawsDoNotPair) {
  Graph g;
  const ValueId x = g.add_argument({{8}, kFloat32});
  const ValueId a = g.add_node(op_exp(), NoAttrs{}, {x})[0];
  const ValueId b = g.add_node(op_neg(), NoAttrs{}, {a})[0];
  g.add_node(op_philox_seed_offset(), PhiloxDrawAttrs{.words = 4}, {});
  g.add_node(op_philox_seed_offset(), PhiloxDrawAttrs{.words = 4}, {});
  g.outputs = {b};
  EXPECT_TRUE(must_follow(g, 0, 1));
  EXPECT_TRUE(must_follow(g, 2, 3));  // two draws keep their order
  EXPECT_FALSE(can_pair(g.nodes[2]));
  const InteropSchedule s = schedule_interop(g, pair_everything());
  EXPECT_TRUE(s.pairs.empty());
}

// mm(x, x); neg of it; a view of y; mm of the view: the second mm moves up to pair with the
// first, its view ahead of both, and the neg after them.
TEST(InteropSchedule, MovesWhatThePartnerNeedsAheadAndKeepsResults) {
  Graph g;
  const ValueId x = g.add_argument({{16, 16}, kFloat32});
  const ValueId y = g.add_argument({{16, 16}, kFloat32});
  const ValueId a = g.add_node(op_mm(), NoAttrs{}, {x, x})[0];
  const ValueId c = g.add_node(op_neg(), NoAttrs{}, {a})[0];
  const ValueId v = g.add_node(op_permute(), PermuteAttrs{.dims = {1, 0}}, {y})[0];
  const ValueId b = g.add_node(op_mm(), NoAttrs{}, {v, y})[0];
  g.outputs = {c, b};
  const Tensor xs = randn({16, 16}), ys = randn({16, 16});
  const std::vector<Tensor> expected = Executor(g).run({xs, ys});
  const InteropSchedule s = schedule_interop(g, pair_everything());
  verify(g);
  ASSERT_EQ(s.pairs.size(), 1u);
  EXPECT_EQ(s.pairs[0].first, 1);
  EXPECT_EQ(g.nodes[0].op->name, "permute");
  EXPECT_EQ(g.nodes[1].op->name, "mm");
  EXPECT_EQ(g.nodes[2].op->name, "mm");
  EXPECT_EQ(g.nodes[3].op->name, "neg");
  const std::vector<int32_t> pairs = s.paired_first();
  const MemoryPlan plan = plan_memory(g, pairs);
  check_plan(g, plan);
  const std::vector<Tensor> got = Executor(g, plan, pairs).run({xs, ys});
  EXPECT_EQ(bits(got[0]), bits(expected[0]));
  EXPECT_EQ(bits(got[1]), bits(expected[1]));
}

// x * exp(x) * abs(x): t = exp(x) dies at the first mul; abs(x) right after may take its
// bytes, unless the two run together. (x * t, not t * x: the mul would write its result over
// its first input, where that dies.)
struct ExpMulAbs {
  Graph g;
  ValueId t = kNoValue, b = kNoValue;  // exp(x), abs(x)
  ExpMulAbs() {
    const ValueId x = g.add_argument({{1024}, kFloat32});
    t = g.add_node(op_exp(), NoAttrs{}, {x})[0];
    const ValueId a = g.add_node(op_mul(), NoAttrs{}, {x, t})[0];
    b = g.add_node(op_abs(), NoAttrs{}, {x})[0];
    g.outputs = {g.add_node(op_mul(), NoAttrs{}, {a, b})[0]};
  }
};

TEST(InteropPlan, APairNeverSharesArenaBytes) {
  ExpMulAbs graph;
  Graph& g = graph.g;
  const ValueId t = graph.t, b = graph.b;
  auto offset = [](const MemoryPlan& plan, ValueId v) {
    for (const MemoryPlan::Buffer& buf : plan.buffers)
      if (buf.value == v) return buf.offset;
    return int64_t{-1};
  };
  const MemoryPlan serial = plan_memory(g);
  EXPECT_EQ(offset(serial, t), offset(serial, b));  // one after the other, they share bytes
  const std::vector<int32_t> pairs{1};
  const MemoryPlan together = plan_memory(g, pairs);
  check_plan(g, together);
  EXPECT_NE(offset(together, t), offset(together, b));
  const Tensor in = randn({1024});
  EXPECT_EQ(bits(Executor(g, together, pairs).run({in})[0]), bits(in * exp(in) * abs(in)));
}

// The same graph: each pair the schedule could make keeps a buffer alive beside another (t
// beside the abs's result), which takes three slots where the plain schedule needs two. With
// max_arena at the plain plan's arena, no pair is made and the arena stays.
TEST(InteropPlan, APairThatWouldGrowTheArenaPastItsLimitIsLeftOut) {
  Graph free = ExpMulAbs().g, limited = ExpMulAbs().g;
  const int64_t plain = plan_memory(limited).arena_bytes;
  const InteropSchedule s = schedule_interop(free, pair_everything());
  ASSERT_FALSE(s.pairs.empty());
  EXPECT_GT(plan_memory(free, s.paired_first()).arena_bytes, plain);
  InteropOptions capped = pair_everything();
  capped.max_arena = plain;
  const InteropSchedule c = schedule_interop(limited, capped);
  EXPECT_TRUE(c.pairs.empty());
  EXPECT_GE(c.refused_for_memory, 1);
  EXPECT_EQ(plan_memory(limited).arena_bytes, plain);
  EXPECT_NE(c.report(limited).find("left out for the arena"), std::string::npos);
}

// The calibration allocates a few megabytes at most: compile() runs it in a process at its
// memory peak (an out-of-place add on 4 MB operands raised W1's and W3's peak RSS by 18 MB).
TEST(InteropCost, CalibrationAllocatesLittle) {
  reset_peak_memory_stats();
  const int64_t before = memory_stats().current_bytes;
  const InteropCosts c = measure_interop_costs();
  EXPECT_LE(memory_stats().peak_bytes - before, int64_t{6} << 20);
  EXPECT_GT(c.bw_1, 0);
  EXPECT_GT(c.bw_n, 0);
  EXPECT_GT(c.gemm_n, 0);
}

TEST(InteropCost, RefusesPairsThatWouldLose) {
  const InteropCosts c{.threads = 2};
  // A large product beside a small element-wise op: on one thread the product takes twice as
  // long as on two, far more than the small op saves.
  const NodeWork big{.flops = 2.0 * 512 * 512 * 512, .bytes = 3.0 * 512 * 512 * 4};
  const NodeWork small{.bytes = 2.0 * 64 * 4};
  EXPECT_GT(pair_seconds_together(big, small, c), pair_seconds_serial(big, small, c));
  // Two large element-wise ops share the memory bandwidth: together no faster than apart.
  const NodeWork stream{.bytes = 3.0 * 4e6 * 4};
  EXPECT_GE(pair_seconds_together(stream, stream, c),
            (1.0 - c.margin) * pair_seconds_serial(stream, stream, c));
  // Two tiny products: one parallel region instead of two is the gain.
  const NodeWork tiny{.flops = 2.0 * 16 * 16 * 16, .bytes = 3.0 * 16 * 16 * 4};
  EXPECT_LT(pair_seconds_together(tiny, tiny, c),
            (1.0 - c.margin) * pair_seconds_serial(tiny, tiny, c));

  // The graph version: a 512^3 product and an exp of 64 values, independent: not paired.
  Graph g;
  const ValueId x = g.add_argument({{512, 512}, kFloat32});
  const ValueId s = g.add_argument({{64}, kFloat32});
  const ValueId m = g.add_node(op_mm(), NoAttrs{}, {x, x})[0];
  const ValueId e = g.add_node(op_exp(), NoAttrs{}, {s})[0];
  g.outputs = {m, e};
  EXPECT_FALSE(must_follow(g, 0, 1));
  const InteropSchedule refused = schedule_interop(g, {.costs = c});
  EXPECT_TRUE(refused.pairs.empty());
  EXPECT_EQ(refused.candidates, 1);
  // One thread: nothing to split.
  EXPECT_EQ(schedule_interop(g, {.costs = {.margin = -100.0, .threads = 1}}).candidates, 0);
}

// The work the model (and the profile's limits) count: a product's 2 M N K, each input and
// output once; self_attention's products over the (query, key) pairs it computes, half of them
// (with the diagonal) under a causal mask, and five products for its gradient.
TEST(InteropCost, NodeWorkCountsProductsAttentionAndBytes) {
  Graph g;
  const ValueId a = g.add_argument({{32, 64}, kFloat32});
  const ValueId b = g.add_argument({{64, 16}, kFloat32});
  g.add_node(op_mm(), NoAttrs{}, {a, b});
  const ValueId x = g.add_argument({{2, 16, 3 * 8}, kFloat32});  // batch 2, length 16, E = 8
  g.add_node(op_self_attention(), SelfAttentionAttrs{.heads = 2, .causal = true}, {x});
  g.add_node(op_self_attention(), SelfAttentionAttrs{.heads = 2}, {x});
  const ValueId dy = g.add_argument({{2, 16, 8}, kFloat32});
  g.add_node(op_self_attention_backward(), SelfAttentionAttrs{.heads = 2, .causal = true}, {dy, x});
  g.add_node(op_exp(), NoAttrs{}, {a});
  const NodeWork mm = node_work(g, g.nodes[0]);
  EXPECT_EQ(mm.flops, 2.0 * 32 * 64 * 16);
  EXPECT_EQ(mm.bytes, 4.0 * (32 * 64 + 64 * 16 + 32 * 16));
  // products x 2 FLOPs x (query, key) pairs x E (heads x head dim) x batch
  EXPECT_EQ(node_work(g, g.nodes[1]).flops, 2 * 2.0 * (16 * 17 / 2) * 8 * 2);
  EXPECT_EQ(node_work(g, g.nodes[2]).flops, 2 * 2.0 * (16 * 16) * 8 * 2);
  EXPECT_EQ(node_work(g, g.nodes[3]).flops, 5 * 2.0 * (16 * 17 / 2) * 8 * 2);
  EXPECT_EQ(node_work(g, g.nodes[3]).bytes, 4.0 * (2 * 16 * 8 + 2 * 2 * 16 * 24));
  EXPECT_EQ(node_work(g, g.nodes[4]).flops, 0.0);
  EXPECT_EQ(node_work(g, g.nodes[4]).bytes, 4.0 * 2 * 32 * 64);

  // addmm: its product; an LSTM sequence: every step's gates from h ([T=5, B=3, 4H=24] by
  // [24, H=6]); the fused first layer: the convolution under its 2x2 pool (1 -> 4 channels,
  // 3x3, padding 1, on 8x8: 64 positions, 16 after the pool).
  const ValueId bias = g.add_argument({{16}, kFloat32});
  g.add_node(op_addmm(), AddmmAttrs{}, {bias, a, b});
  EXPECT_EQ(node_work(g, g.nodes[5]).flops, 2.0 * 32 * 64 * 16);
  const ValueId xg = g.add_argument({{5, 3, 24}, kFloat32});
  const ValueId whh = g.add_argument({{24, 6}, kFloat32});
  const ValueId h0 = g.add_argument({{3, 6}, kFloat32});
  g.add_node(op_lstm_sequence(), RnnSequenceAttrs{}, {xg, whh, h0, h0});
  EXPECT_EQ(node_work(g, g.nodes[6]).flops, 2.0 * 5 * 3 * 24 * 6);
  const ValueId img = g.add_argument({{2, 1, 8, 8}, kFloat32});
  const ValueId filt = g.add_argument({{4, 1, 3, 3}, kFloat32});
  const ConvPoolAttrs pool{.conv = {.pad_l = {1, 1}, .pad_r = {1, 1}}};
  g.add_node(op_conv_relu_max_pool_indices(), pool, {img, filt});
  EXPECT_EQ(node_work(g, g.nodes[7]).flops, 2.0 * (2 * 4 * 8 * 8) * 9);
}

// W4's step at its benchmark size: with the quiet defaults (all threads nearly twice as fast as
// one, a region 0.5 us) the model pairs no large product; with a region of 0.7 ms (a host whose
// other processes keep the second core busy) it pairs the backward's dx / dW products.
TEST(InteropCost, W4PairsItsProductsOnlyWhenARegionIsExpensive) {
  manual_seed(7);
  models::CharTransformer model;
  optim::AdamW opt(model.parameters(), {.lr = 1e-3, .weight_decay = 0.01});
  auto step = compile(test_util::classification_step(model, opt), {.disable_passes = {"interop"}});
  const Tensor x = randint(0, 256, {16, 128}), y = randint(0, 256, {16, 128});
  for (int i = 0; i < 3; ++i) step(x, y);
  ASSERT_NE(step.graph(), nullptr);
  auto large_products = [](const Graph& g, const InteropSchedule& s) {
    int n = 0;
    for (const InteropPair& p : s.pairs)
      for (int32_t k : {p.first, p.first + 1})
        n += node_work(g, g.nodes[static_cast<std::size_t>(k)]).flops > 1e7 ? 1 : 0;
    return n;
  };
  Graph quiet = *step.graph(), loaded = *step.graph();
  const InteropSchedule q = schedule_interop(quiet, {.costs = {.threads = 2}});
  const InteropSchedule l = schedule_interop(loaded, {.costs = {.region = 7e-4, .threads = 2}});
  verify(quiet);
  verify(loaded);
  EXPECT_EQ(large_products(quiet, q), 0) << q.report(quiet);
  EXPECT_GE(large_products(loaded, l), 10) << l.report(loaded);
  for (const InteropPair& p : l.pairs) EXPECT_LT(p.together_s, 0.9 * p.serial_s);
}

// What a pair relies on: inside an active two-thread region, athanor's kernels and oneDNN's
// primitives run on the calling thread alone (no nested team: the process gains no threads) and
// compute the same bits as on all threads.
TEST(InteropExecutor, KernelsInsideAPairRunOnOneThreadWithTheSameBits) {
  auto threads_now = [] {
    return std::distance(std::filesystem::directory_iterator("/proc/self/task"),
                         std::filesystem::directory_iterator{});
  };
  const Tensor a = randn({256, 320}), b = randn({320, 192}), v = randn({1 << 20});
  const Tensor mm_all = matmul(a, b), add_all = v + v;
  Tensor mm_one, add_one;
  bool inline_region = false;
  const auto before = threads_now();
  run_concurrently(
      [&] {
        inline_region = in_parallel_region();
        mm_one = matmul(a, b);
        add_one = v + v;
      },
      [] {});
  EXPECT_TRUE(inline_region);
  EXPECT_EQ(threads_now(), before);
  EXPECT_EQ(bits(mm_one), bits(mm_all));
  EXPECT_EQ(bits(add_one), bits(add_all));
}

// Compiled with every independent candidate paired (and with the default model), W2's and
// W4's steps give the eager step's losses and parameters bit for bit.
template <class MakeModel, class MakeOpt, class Batch>
void expect_bit_identical(MakeModel make_model, MakeOpt make_opt, Batch batch, bool force) {
  manual_seed(5);
  auto eager_model = make_model();
  auto compiled_model = make_model();
  compiled_model->load_state_dict(eager_model->state_dict());
  auto eager_opt = make_opt(*eager_model);
  auto compiled_opt = make_opt(*compiled_model);
  auto eager = test_util::classification_step(*eager_model, *eager_opt);
  CompileOptions options;
  if (force) options.interop_costs = pair_everything().costs;
  auto compiled = compile(test_util::classification_step(*compiled_model, *compiled_opt), options);
  for (int i = 0; i < 5; ++i) {
    const auto [x, y] = batch();
    EXPECT_EQ(bits(eager(x, y)), bits(compiled(x, y))) << "step " << i;
  }
  ASSERT_NE(compiled.pass_report(), nullptr);
  if (force) {
    EXPECT_GT(compiled.pass_report()->interop.pairs.size(), 0u);
    EXPECT_EQ(compiled.executor()->last_run().pairs,
              static_cast<int64_t>(compiled.pass_report()->interop.pairs.size()));
  }
  const auto pe = eager_model->parameters(), pc = compiled_model->parameters();
  ASSERT_EQ(pe.size(), pc.size());
  for (std::size_t p = 0; p < pe.size(); ++p) EXPECT_EQ(bits(pe[p]), bits(pc[p])) << "param " << p;
}

TEST(InteropCompile, W2StepWithPairsIsBitIdenticalToEager) {
  for (const bool force : {true, false}) {
    expect_bit_identical([] { return models::fashion_cnn(); },
                         [](nn::Module& m) {
                           return std::make_unique<optim::Adam>(m.parameters(),
                                                                optim::AdamOptions{.lr = 1e-3});
                         },
                         [] {
                           return std::pair{randn({8, 1, 28, 28}), randint(0, 10, {8})};
                         },
                         force);
  }
}

TEST(InteropCompile, W4StepWithPairsIsBitIdenticalToEager) {
  for (const bool force : {true, false}) {
    expect_bit_identical([] { return std::make_shared<models::CharTransformer>(); },
                         [](nn::Module& m) {
                           return std::make_unique<optim::AdamW>(
                               m.parameters(),
                               optim::AdamWOptions{.lr = 1e-3, .weight_decay = 0.01});
                         },
                         [] {
                           return std::pair{randint(0, 256, {2, 32}), randint(0, 256, {2, 32})};
                         },
                         force);
  }
}

TEST(InteropCompile, TheScheduleSwitchesOffByName) {
  manual_seed(6);
  auto model = models::fashion_cnn();
  optim::Adam opt(model->parameters(), {.lr = 1e-3});
  auto step = compile(test_util::classification_step(*model, opt),
                      {.disable_passes = {"interop"}, .interop_costs = pair_everything().costs});
  const Tensor x = randn({4, 1, 28, 28}), y = randint(0, 10, {4});
  for (int i = 0; i < 3; ++i) step(x, y);
  ASSERT_NE(step.pass_report(), nullptr);
  EXPECT_TRUE(step.pass_report()->interop.pairs.empty());
  EXPECT_EQ(step.executor()->last_run().pairs, 0);
}

}  // namespace
}  // namespace ath::graph
