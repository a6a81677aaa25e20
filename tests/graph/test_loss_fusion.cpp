// The log_softmax_nll pass: a classifier head written as log_softmax + nll_loss compiles to
// cross_entropy and its backward, with losses and gradients within a few ulp of eager; heads
// whose log-probabilities are read elsewhere stay as written.
#include <gtest/gtest.h>

#include <cmath>

#include "athanor/athanor.h"
#include "athanor/graph/compile.h"
#include "athanor/graph/executor.h"
#include "athanor/graph/passes.h"
#include "athanor/graph/tracer.h"
#include "athanor/graph/verify.h"
#include "athanor/nn/linear.h"
#include "athanor/optim/sgd.h"

namespace ath::graph {
namespace {

// Largest |a - b| over the largest |b|: a few ulp of the tensor's scale, for every element
// (parameters near zero would make an element-wise relative error meaningless).
double normwise_diff(const Tensor& a, const Tensor& b) {
  const std::vector<double> av = a.to(kFloat64).to_vector<double>();
  const std::vector<double> bv = b.to(kFloat64).to_vector<double>();
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < av.size(); ++i) {
    diff = std::max(diff, std::abs(av[i] - bv[i]));
    scale = std::max(scale, std::abs(bv[i]));
  }
  return diff / std::max(scale, 1e-30);
}

double max_rel_diff(const Tensor& a, const Tensor& b) {
  const std::vector<double> av = a.to(kFloat64).to_vector<double>();
  const std::vector<double> bv = b.to(kFloat64).to_vector<double>();
  double worst = 0;
  for (std::size_t i = 0; i < av.size(); ++i)
    worst = std::max(worst, std::abs(av[i] - bv[i]) / (1e-6 + std::abs(bv[i])));
  return worst;
}

TEST(LogSoftmaxNll, AHeadWrittenAsTwoOpsTrainsCompiledAsCrossEntropy) {
  for (Reduction r : {Reduction::Mean, Reduction::Sum}) {
    for (bool weighted : {false, true}) {
      SCOPED_TRACE(testing::Message()
                   << "reduction " << static_cast<int>(r) << " weighted " << weighted);
      manual_seed(5);
      nn::Linear eager_fc({.in = 12, .out = 7}), compiled_fc({.in = 12, .out = 7});
      compiled_fc.load_state_dict(eager_fc.state_dict());
      optim::SGD eager_opt(eager_fc.parameters(), {.lr = 0.1});
      optim::SGD compiled_opt(compiled_fc.parameters(), {.lr = 0.1});
      const Tensor w = weighted ? rand({7}) + 0.5 : Tensor();
      auto step_of = [&](nn::Linear& fc, optim::Optimizer& opt) {
        return [&fc, &opt, &w, r](const Tensor& x, const Tensor& y) {
          opt.zero_grad();
          Tensor loss =
              nll_loss(log_softmax(fc(x), 1), y, {.weight = w, .ignore_index = 3, .reduction = r});
          loss.backward();
          opt.step();
          return loss;
        };
      };
      auto eager = step_of(eager_fc, eager_opt);
      auto compiled = compile(step_of(compiled_fc, compiled_opt));
      for (int i = 0; i < 4; ++i) {
        const Tensor x = randn({9, 12}) * 3, y = randint(0, 7, {9});
        const Tensor le = eager(x, y), lc = compiled(x, y);
        EXPECT_LE(max_rel_diff(lc, le), 1e-5) << "step " << i;
      }
      ASSERT_NE(compiled.graph(), nullptr);
      EXPECT_EQ(compiled.graph()->count("cross_entropy"), 1);
      EXPECT_EQ(compiled.graph()->count("cross_entropy_backward"), 1);
      EXPECT_EQ(compiled.graph()->count("log_softmax"), 0);
      EXPECT_EQ(compiled.graph()->count("log_softmax_backward"), 0);
      EXPECT_EQ(compiled.graph()->count("nll_loss"), 0);
      for (std::size_t p = 0; p < eager_fc.parameters().size(); ++p) {
        EXPECT_LE(normwise_diff(compiled_fc.parameters()[p], eager_fc.parameters()[p]), 1e-5)
            << "parameter " << p;
      }
    }
  }
}

// Switched off by name, the compiled step is eager's bit for bit again.
TEST(LogSoftmaxNll, OffByNameTheStepKeepsEagersBits) {
  manual_seed(6);
  nn::Linear eager_fc({.in = 5, .out = 4}), compiled_fc({.in = 5, .out = 4});
  compiled_fc.load_state_dict(eager_fc.state_dict());
  auto step_of = [](nn::Linear& fc) {
    return [&fc](const Tensor& x, const Tensor& y) {
      Tensor loss = nll_loss(log_softmax(fc(x), -1), y);
      loss.backward();
      return loss;
    };
  };
  auto eager = step_of(eager_fc);
  auto compiled = compile(step_of(compiled_fc), {.disable_passes = {"log_softmax_nll"}});
  for (int i = 0; i < 3; ++i) {
    const Tensor x = randn({6, 5}), y = randint(0, 4, {6});
    EXPECT_TRUE(equal(eager(x, y), compiled(x, y)));
  }
  EXPECT_EQ(compiled.graph()->count("cross_entropy"), 0);
  EXPECT_TRUE(equal(eager_fc.weight.grad(), compiled_fc.weight.grad()));
}

// Forward only (evaluation): log_softmax -> nll_loss alone becomes cross_entropy. Log-
// probabilities that something else reads (an output here) stay.
TEST(LogSoftmaxNll, ForwardOnlyFusesAndSharedLogProbabilitiesStay) {
  const Tensor x = randn({4, 6}), y = randint(0, 6, {4});
  {
    Tracer tracer({x, y});
    Tensor loss = nll_loss(log_softmax(x, 1), y);
    Graph g = tracer.finish(std::vector<Tensor>{loss});
    const std::vector<Tensor> before = Executor(g).run(std::vector<Tensor>{x, y});
    EXPECT_EQ(fuse_log_softmax_nll(g), 1);
    verify(g);
    EXPECT_EQ(g.count("cross_entropy"), 1);
    EXPECT_EQ(g.count("log_softmax"), 0);
    EXPECT_LE(max_rel_diff(Executor(g).run(std::vector<Tensor>{x, y})[0], before[0]), 1e-6);
  }
  {
    Tracer tracer({x, y});
    Tensor ls = log_softmax(x, 1);
    Tensor loss = nll_loss(ls, y);
    Graph g = tracer.finish(std::vector<Tensor>{loss, ls});
    EXPECT_EQ(fuse_log_softmax_nll(g), 0);
  }
  {
    Tracer tracer({x, y});  // softmax over the wrong dim
    Tensor loss = nll_loss(log_softmax(x, 0), y);
    Graph g = tracer.finish(std::vector<Tensor>{loss});
    EXPECT_EQ(fuse_log_softmax_nll(g), 0);
  }
}

}  // namespace
}  // namespace ath::graph
