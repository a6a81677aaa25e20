// Pointwise fusion: the fused_pointwise op against the ops it replaces (bit for bit), the fuse
// pass on hand-built graphs (what joins a group and what must not), random element-wise DAGs
// compiled against eager over many seeds, and W2's model, whose ReLU backwards become one
// kernel each.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "athanor/athanor.h"
#include "athanor/graph/compile.h"
#include "athanor/graph/executor.h"
#include "athanor/graph/passes.h"
#include "athanor/graph/verify.h"
#include "athanor/models/char_transformer.h"
#include "athanor/models/fashion.h"
#include "athanor/ops/fused_pointwise.h"
#include "athanor/optim/adam.h"
#include "graph_test_util.h"
#include "support/expect_error.h"

namespace ath::graph {
namespace {

// Bit patterns, so NaNs compare equal to themselves and -0 differs from +0.
// W4's compiled step, forward + backward + AdamW, at most this many kernels (see the test).
// 97 before norm_add folded 4 residual adds; 93 before each block's attention core (split, two
// products, softmax, merge and their backward) became self_attention and its backward op.
constexpr int kW4MaxKernels = 73;

std::vector<uint32_t> bits(const Tensor& t) {
  const std::vector<float> v = t.to(kFloat32).contiguous().to_vector<float>();
  std::vector<uint32_t> b(v.size());
  if (!v.empty()) std::memcpy(b.data(), v.data(), v.size() * sizeof(float));
  return b;
}

// Values that exercise every rounding and comparison edge: signed zeros, infinities, NaN,
// subnormals, and ordinary numbers, with repeats so comparisons see equal operands.
Tensor edgy(int64_t n, uint64_t seed) {
  manual_seed(seed);
  Tensor x = randn({n});
  std::vector<float> v = x.to_vector<float>();
  const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-40f, -1e-40f, 1.0f, -1.0f};
  for (std::size_t i = 0; i < v.size(); i += 7) v[i] = special[(i / 7) % std::size(special)];
  return from_vector(v);
}

TEST(FusedPointwise, ReluBackwardProgramMatchesTheOpsBitForBit) {
  PointwiseProgram p;
  p.add_input(kFloat32);  // grad
  p.add_input(kFloat32);  // relu's output
  const int32_t zero = p.add_input(kFloat32);
  const int32_t mask = p.add_step(PointwiseCode::Gt, 1, zero);
  const int32_t f = p.add_step(PointwiseCode::ToFloat, mask);
  p.add_step(PointwiseCode::Mul, 0, f);
  for (int64_t n : {0, 1, 1000, 1024, 1025, 100000}) {  // block and thread-chunk edges
    const Tensor g = edgy(n, 1), out = relu(edgy(n, 2));
    const Tensor fused = fused_pointwise({g, out, zeros({})}, p);
    EXPECT_EQ(bits(fused), bits(g * gt(out, 0.0).to(kFloat32))) << "n = " << n;
  }
}

TEST(FusedPointwise, EveryCodeMatchesItsOp) {
  const Tensor a = edgy(3000, 3), b = edgy(3000, 4);
  auto run2 = [&](PointwiseCode c, float alpha = 1.0f) {
    PointwiseProgram p;
    p.add_input(kFloat32);
    p.add_input(kFloat32);
    const int32_t r = p.add_step(c, 0, 1, alpha);
    if (pointwise_code_dtype(c) == kBool) p.add_step(PointwiseCode::ToFloat, r);
    return fused_pointwise({a, b}, p);
  };
  EXPECT_EQ(bits(run2(PointwiseCode::Add)), bits(add(a, b)));
  EXPECT_EQ(bits(run2(PointwiseCode::Add, -1.0f)), bits(sub(a, b)));
  EXPECT_EQ(bits(run2(PointwiseCode::Add, 0.3f)), bits(add(a, b, 0.3f)));
  EXPECT_EQ(bits(run2(PointwiseCode::Mul)), bits(mul(a, b)));
  EXPECT_EQ(bits(run2(PointwiseCode::Div)), bits(div(a, b)));
  EXPECT_EQ(bits(run2(PointwiseCode::Gt)), bits(gt(a, b)));
  EXPECT_EQ(bits(run2(PointwiseCode::Lt)), bits(lt(a, b)));
  EXPECT_EQ(bits(run2(PointwiseCode::Ge)), bits(ge(a, b)));
  EXPECT_EQ(bits(run2(PointwiseCode::Le)), bits(le(a, b)));
  EXPECT_EQ(bits(run2(PointwiseCode::Eq)), bits(eq(a, b)));
  EXPECT_EQ(bits(run2(PointwiseCode::Ne)), bits(ne(a, b)));
  PointwiseProgram neg_p;
  neg_p.add_input(kFloat32);
  neg_p.add_step(PointwiseCode::Neg, 0);
  EXPECT_EQ(bits(fused_pointwise({a}, neg_p)), bits(neg(a)));
}

TEST(FusedPointwise, BadProgramsAndInputsAreRefusedByName) {
  PointwiseProgram reads_ahead;
  reads_ahead.add_input(kFloat32);
  reads_ahead.add_step(PointwiseCode::Mul, 0, 2);
  testing::expect_error_naming([&] { (void)reads_ahead.encode(); },
                               "step 0 (mul) reads register %2");
  PointwiseProgram wrong_dtype;
  wrong_dtype.add_input(kBool);
  wrong_dtype.add_step(PointwiseCode::Neg, 0);
  testing::expect_error_naming([&] { (void)wrong_dtype.encode(); }, "takes float32 operands");
  testing::expect_error_naming([&] { (void)PointwiseProgram::decode("\x01\x07\x02"); },
                               "fused_pointwise");
  PointwiseProgram ok;
  ok.add_input(kFloat32);
  ok.add_input(kFloat32);
  ok.add_step(PointwiseCode::Add, 0, 1);
  testing::expect_error_naming([&] { fused_pointwise({ones({3})}, ok); }, "takes 2 inputs, got 1");
  testing::expect_error_naming(
      [&] {
        fused_pointwise({ones({3}), ones({4})}, ok);
      },
      "only 0-d inputs broadcast");
  testing::expect_error_naming(
      [&] {
        fused_pointwise({ones({3}), ones({3}, kFloat64)}, ok);
      },
      "input 1 is float64, the program expects float32");
}

std::vector<float> run(const Graph& g, const std::vector<Tensor>& args, std::size_t output = 0) {
  Executor exec(g);
  return exec.run(args)[output].to_vector<float>();
}

TEST(FusePass, ReluBackwardChainBecomesOneNode) {
  Graph g;
  const ValueId grad = g.add_argument({{5, 300}, kFloat32});
  const ValueId out = g.add_argument({{5, 300}, kFloat32});
  const ValueId zero = g.add_constant(full({}, 0.0, kFloat64));  // converted by the pass
  const ValueId mask = g.add_node(op_gt(), NoAttrs{}, {out, zero})[0];
  const ValueId f = g.add_node(op_to_dtype(), ToDTypeAttrs{.dtype = kFloat32}, {mask})[0];
  g.outputs.push_back(g.add_node(op_mul(), NoAttrs{}, {grad, f})[0]);
  const std::vector<Tensor> args{edgy(1500, 5).view({5, 300}), edgy(1500, 6).view({5, 300})};
  const std::vector<float> before = run(g, args);
  EXPECT_EQ(fuse_pointwise(g), 1);
  verify(g);
  EXPECT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.count("fused_pointwise"), 1);
  EXPECT_EQ(g.to_text(),
            "graph(%0: f32[5,300] arg0, %1: f32[5,300] arg1, %2: f32[] const0)\n"
            "  %3 = fused_pointwise(%1, %2, %0) f32[5,300] "
            "{r3=gt(r0, r1); r4=to_float(r3); r5=mul(r2, r4)}\n"
            "  return (%3)\n");
  const std::vector<float> after = run(g, args);
  EXPECT_EQ(std::memcmp(before.data(), after.data(), before.size() * sizeof(float)), 0);
}

TEST(FusePass, IntermediatesReadElsewhereOrWrittenInputsStopAGroup) {
  // The mask is a graph output too: it must exist, so only to_dtype and mul fuse.
  Graph g;
  const ValueId x = g.add_argument({{8}, kFloat32});
  const ValueId mask = g.add_node(op_gt(), NoAttrs{}, {x, g.add_constant(zeros({}))})[0];
  const ValueId f = g.add_node(op_to_dtype(), ToDTypeAttrs{.dtype = kFloat32}, {mask})[0];
  g.outputs.push_back(g.add_node(op_mul(), NoAttrs{}, {x, f})[0]);
  g.outputs.push_back(mask);
  EXPECT_EQ(fuse_pointwise(g), 1);
  verify(g);
  EXPECT_EQ(g.count("gt"), 1);
  EXPECT_EQ(g.count("fused_pointwise"), 1);

  // A write to the product's input between producer and sink: the producer must run first.
  Graph h;
  const ValueId y = h.add_argument({{8}, kFloat32});
  const ValueId p = h.add_state(ones({8}));
  const ValueId doubled = h.add_node(op_mul(), NoAttrs{}, {p, h.add_constant(full({}, 2.0))})[0];
  test_util::add_into(h, p, y);
  h.outputs.push_back(h.add_node(op_neg(), NoAttrs{}, {doubled})[0]);
  verify(h);
  EXPECT_EQ(fuse_pointwise(h), 0);

  // Broadcasting beyond scalars and non-float32 math stay unfused.
  Graph k;
  const ValueId row = k.add_argument({{1, 8}, kFloat32});
  const ValueId mat = k.add_argument({{4, 8}, kFloat32});
  const ValueId ints = k.add_argument({{8}, kInt64});
  k.outputs.push_back(
      k.add_node(op_neg(), NoAttrs{}, {k.add_node(op_mul(), NoAttrs{}, {row, mat})[0]})[0]);
  k.outputs.push_back(
      k.add_node(op_neg(), NoAttrs{}, {k.add_node(op_add(), AlphaAttrs{}, {ints, ints})[0]})[0]);
  EXPECT_EQ(fuse_pointwise(k), 0);
}

// Random element-wise DAGs over a few same-shape inputs and scalars: every pass on, results
// bit-identical to the graph as built, over many seeds.
TEST(FusePass, RandomPointwiseGraphsAreBitIdenticalAfterAllPasses) {
  int fused_total = 0;
  for (uint64_t seed = 0; seed < 60; ++seed) {
    std::mt19937_64 rng(seed);
    auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
    const Shape shape = seed % 3 == 0 ? Shape{7} : Shape{3, 1100};
    Graph g;
    std::vector<ValueId> floats, bools;
    std::vector<Tensor> args;
    for (int i = 0; i < 3; ++i) {
      floats.push_back(g.add_argument({shape, kFloat32}));
      args.push_back(edgy(numel(shape), seed * 10 + static_cast<uint64_t>(i)).view(shape));
    }
    const float scalars[] = {0.0f, 1.0f, -2.5f, 0.5f};
    for (float s : scalars) floats.push_back(g.add_constant(full({}, s)));
    const int nodes = 3 + static_cast<int>(pick(10));
    for (int i = 0; i < nodes; ++i) {
      const ValueId a = floats[pick(floats.size())], b = floats[pick(floats.size())];
      switch (pick(7)) {
        case 0:
          floats.push_back(
              g.add_node(op_add(), AlphaAttrs{.alpha = pick(2) ? 1.0 : -0.75}, {a, b})[0]);
          break;
        case 1:
          floats.push_back(g.add_node(op_mul(), NoAttrs{}, {a, b})[0]);
          break;
        case 2:
          floats.push_back(g.add_node(op_div(), NoAttrs{}, {a, b})[0]);
          break;
        case 3:
          floats.push_back(g.add_node(op_neg(), NoAttrs{}, {a})[0]);
          break;
        case 4:
          bools.push_back(g.add_node(pick(2) ? op_gt() : op_le(), NoAttrs{}, {a, b})[0]);
          break;
        default:
          if (bools.empty()) continue;
          floats.push_back(g.add_node(op_to_dtype(), ToDTypeAttrs{.dtype = kFloat32},
                                      {bools[pick(bools.size())]})[0]);
      }
    }
    // The last float result, plus sometimes an intermediate, are outputs.
    g.outputs.push_back(floats.back());
    if (pick(2) && floats.size() > 8) g.outputs.push_back(floats[7 + pick(floats.size() - 7)]);
    if (g.value(g.outputs[0]).meta.shape != shape) continue;  // scalars only: nothing to run
    Executor eager(g);
    const std::vector<Tensor> expected = eager.run(args);
    Graph compiled = g;
    const PassReport report = run_passes(compiled);
    for (const auto& e : report.passes)
      if (e.name == "fuse") fused_total += e.changed;
    Executor exec(compiled);
    const std::vector<Tensor> got = exec.run(args);
    ASSERT_EQ(got.size(), expected.size());
    for (std::size_t o = 0; o < got.size(); ++o)
      ASSERT_EQ(bits(got[o]), bits(expected[o])) << "seed " << seed << ", output " << o << "\n"
                                                 << g.to_text() << "\nafter passes\n"
                                                 << compiled.to_text();
  }
  EXPECT_GT(fused_total, 20);  // the generator does make fusible chains
}

// Random steps over parameters with broadcasting (a row, a column, a matrix), reductions and
// element-wise chains, with their backward, compiled: the replays' losses and gradients are the
// eager ones bit for bit, over many seeds.
TEST(FusePass, RandomStepsWithBroadcastsAndReductionsReplayBitIdentically) {
  int fused_total = 0;
  for (uint64_t seed = 0; seed < 25; ++seed) {
    auto make_params = [&] {
      manual_seed(100 + seed);
      return std::vector<Tensor>{randn({4, 5}).requires_grad_(), randn({4, 1}).requires_grad_(),
                                 randn({1, 5}).requires_grad_()};
    };
    const std::vector<Tensor> eager_p = make_params(), compiled_p = make_params();
    auto step_of = [seed](const std::vector<Tensor>& p) {
      return [seed, &p](const Tensor& x) {
        for (const Tensor& t : p) t.set_grad(Tensor());
        std::mt19937_64 rng(seed);  // the same ops at every call: one graph
        auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
        std::vector<Tensor> pool{x, p[0], p[1], p[2]};
        for (int i = 0; i < 8; ++i) {
          const Tensor& a = pool[pick(pool.size())];
          const Tensor& b = pool[pick(pool.size())];
          switch (pick(8)) {
            case 0:
              pool.push_back(a + b);
              break;
            case 1:
              pool.push_back(a * b);
              break;
            case 2:
              pool.push_back(a - 0.5 * b);
              break;
            case 3:
              pool.push_back(relu(a) * b);
              break;
            case 4:
              pool.push_back(a / (abs(b) + 1.0));
              break;
            case 5:
              pool.push_back(-a);
              break;
            case 6:
              pool.push_back(a.sum({0}, /*keepdim=*/true) * b);
              break;
            default:
              pool.push_back(a.mean({1}, /*keepdim=*/true) + b);
              break;
          }
        }
        Tensor loss = pool.back().sum() + pool[pool.size() - 2].mean();
        loss.backward();
        return loss;
      };
    };
    auto eager = step_of(eager_p);
    auto compiled = compile(step_of(compiled_p));
    for (int call = 0; call < 4; ++call) {
      manual_seed(200 + seed * 10 + static_cast<uint64_t>(call));
      const Tensor x = randn({4, 5});
      ASSERT_EQ(bits(eager(x)), bits(compiled(x))) << "seed " << seed << ", call " << call;
      for (std::size_t i = 0; i < eager_p.size(); ++i) {
        const Tensor ge = eager_p[i].grad(), gc = compiled_p[i].grad();
        ASSERT_EQ(ge.defined(), gc.defined()) << "seed " << seed << ", parameter " << i;
        if (ge.defined()) {
          ASSERT_EQ(bits(ge), bits(gc)) << "seed " << seed << ", parameter " << i;
        }
      }
    }
    EXPECT_EQ(compiled.stats().replays, 2) << "seed " << seed;
    fused_total += compiled.graph()->count("fused_pointwise");
  }
  EXPECT_GT(fused_total, 5);  // some steps did fuse
}

using Step = std::function<Tensor(const Tensor&, const Tensor&)>;

// What expect_w2_bit_identical trained; the compiled step's graph is `compiled->graph()`.
struct W2Twins {
  std::shared_ptr<nn::Module> eager_model, compiled_model;
  std::unique_ptr<optim::Adam> eager_opt, compiled_opt;
  std::unique_ptr<Compiled<Step>> compiled;
};

// W2's model and Adam twice from the same weights, one step eager and one compiled with
// `options`: `steps` batches of `batch` give the same losses bit for bit, then the same
// parameters.
W2Twins expect_w2_bit_identical(int steps, int64_t batch, CompileOptions options = {}) {
  W2Twins t{models::fashion_cnn(), models::fashion_cnn(), nullptr, nullptr, nullptr};
  t.compiled_model->load_state_dict(t.eager_model->state_dict());
  t.eager_opt =
      std::make_unique<optim::Adam>(t.eager_model->parameters(), optim::AdamOptions{.lr = 1e-3});
  t.compiled_opt =
      std::make_unique<optim::Adam>(t.compiled_model->parameters(), optim::AdamOptions{.lr = 1e-3});
  Step eager = test_util::classification_step(*t.eager_model, *t.eager_opt);
  t.compiled = std::make_unique<Compiled<Step>>(
      test_util::classification_step(*t.compiled_model, *t.compiled_opt), std::move(options));
  for (int i = 0; i < steps; ++i) {
    const Tensor x = randn({batch, 1, 28, 28}), y = randint(0, 10, {batch});
    EXPECT_EQ(bits(eager(x, y)), bits((*t.compiled)(x, y))) << "step " << i;
  }
  for (std::size_t p = 0; p < t.eager_model->parameters().size(); ++p) {
    EXPECT_EQ(bits(t.eager_model->parameters()[p]), bits(t.compiled_model->parameters()[p]))
        << "parameter " << p;
  }
  return t;
}

// W2's model and optimizer, compiled: each ReLU's backward (mask, convert, multiply) is one
// kernel or part of one, and training stays bit-identical to eager (with "conv_pool_train" off,
// which would fold the first layer's pool and its mask away: see the next test).
TEST(FusePass, W2ReluBackwardsAreOneKernelEach) {
  manual_seed(3);
  const W2Twins t = expect_w2_bit_identical(4, 4, {.disable_passes = {"conv_pool_train"}});
  const Graph* g = t.compiled->graph();
  ASSERT_NE(g, nullptr);
  // Forward: each ReLU is the epilogue of the conv / linear before it (the "epilogue" pass).
  EXPECT_EQ(g->count("relu"), 0);
  EXPECT_EQ(g->count("convolution_relu"), 2);
  EXPECT_EQ(g->count("linear_relu"), 1);
  // Backward: the fc ReLU's mask is one fused_pointwise; the conv ReLUs' masks fold into their
  // max-pool's backward scatter (the "pool_mask" pass), which then writes the gradient once.
  EXPECT_EQ(g->count("fused_pointwise"), 1);
  EXPECT_EQ(g->count("max_pool2d_backward_masked"), 2);
  EXPECT_EQ(g->count("max_pool2d_backward"), 0);
  EXPECT_EQ(g->count("gt"), 0);
  EXPECT_EQ(g->count("to_dtype"), 0);
}

// With every pass, W2's 1-channel first convolution, its ReLU and its pool are one
// conv_relu_max_pool_indices node and their weight gradient one conv_relu_max_pool_weight_grad
// (the "conv_pool_train" pass; the second convolution, with 32 input channels, stays oneDNN's).
// Eager first-layer convolutions run the same sums (ops/kernels/cpu/conv_kernels.h), so the
// losses and parameters stay bit-identical to eager over several Adam steps.
TEST(FusePass, W2FirstConvolutionReluAndPoolAreOneKernel) {
  manual_seed(5);
  const W2Twins t = expect_w2_bit_identical(5, 8);
  const Graph* g = t.compiled->graph();
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->count("conv_relu_max_pool_indices"), 1);
  EXPECT_EQ(g->count("convolution_relu"), 1);
  EXPECT_EQ(g->count("max_pool2d"), 1);
  // Backward: the first layer's masked scatter and weight gradient are one node; the second
  // layer's stay oneDNN's and the pool_mask kernel.
  EXPECT_EQ(g->count("conv_relu_max_pool_weight_grad"), 1);
  EXPECT_EQ(g->count("max_pool2d_backward_masked"), 1);
  EXPECT_EQ(g->count("convolution_backward_weight"), 1);
}

// W4's step (the character transformer, AdamW) compiles to a bounded number of kernels: every
// node that is not a view runs one. The bound is today's count; a change that adds kernels to
// the step must say why here. The recomputations the plan lists come on top: the "remat" pass
// recomputes the GELU outputs the backward reads where it reads them, one kernel each, instead
// of keeping them from the forward.
TEST(FusePass, W4StepCompilesToABoundedNumberOfKernels) {
  manual_seed(4);
  models::CharTransformer model;
  optim::AdamW opt(model.parameters(), {.lr = 1e-3, .weight_decay = 0.01});
  auto step = compile(test_util::classification_step(model, opt));
  const Tensor x = randint(0, 256, {2, 16}), y = randint(0, 256, {2, 16});
  for (int i = 0; i < 4; ++i) step(x, y);
  ASSERT_NE(step.graph(), nullptr);
  int kernels = 0;
  for (const Node& n : step.graph()->nodes) kernels += n.op->kind == OpKind::View ? 0 : 1;
  const std::size_t recomputed = step.memory_plan()->recomputed.size();
  EXPECT_LE(recomputed, 2u);
  EXPECT_LE(kernels, kW4MaxKernels + static_cast<int>(recomputed)) << "kernels: " << kernels;
  EXPECT_EQ(step.graph()->count("adam_update"), 1);  // one multi-tensor update for all
  // Each block's causal self-attention is one fused op forward and one backward.
  EXPECT_EQ(step.graph()->count("self_attention"), 2);
  EXPECT_EQ(step.graph()->count("self_attention_backward"), 2);
  EXPECT_EQ(step.graph()->count("attention_softmax"), 0);
}

}  // namespace
}  // namespace ath::graph
