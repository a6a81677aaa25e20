// compile(): a compiled training step computes exactly what the eager one computes, and the
// cache, guards and fallbacks behave as compile.h promises.
#include <gtest/gtest.h>

#include <memory>

#include "athanor/athanor.h"
#include "athanor/graph/compile.h"
#include "athanor/nn/activation.h"
#include "athanor/nn/dropout.h"
#include "athanor/nn/linear.h"
#include "athanor/nn/sequential.h"
#include "athanor/optim/adam.h"
#include "athanor/optim/sgd.h"
#include "graph_test_util.h"

namespace ath {
namespace {

std::unique_ptr<nn::Sequential> make_mlp(uint64_t seed, double dropout = 0.0) {
  manual_seed(seed);
  auto m = std::make_unique<nn::Sequential>();
  m->emplace_back<nn::Linear>(nn::LinearOptions{.in = 6, .out = 16});
  m->emplace_back<nn::ReLU>();
  if (dropout > 0) m->emplace_back<nn::Dropout>(nn::DropoutOptions{.p = dropout});
  m->emplace_back<nn::Linear>(nn::LinearOptions{.in = 16, .out = 3});
  return m;
}

struct Batch {
  Tensor x, y;
};

Batch batch(int64_t n, uint64_t seed) {
  manual_seed(1000 + seed);
  return {randn({n, 6}), randint(0, 3, {n})};
}

std::vector<float> flat_params(nn::Module& m) {
  std::vector<float> all;
  for (const Tensor& p : m.parameters()) {
    const std::vector<float> v = p.to_vector<float>();
    all.insert(all.end(), v.begin(), v.end());
  }
  return all;
}

// Trains two identical models for `steps` steps, one eagerly and one compiled, on the same
// batches and generator draws; every loss and the final parameters must be bit-identical (the
// replay runs the same kernels in the same order).
template <class MakeOpt>
void expect_same_training(MakeOpt make_opt, double dropout, int steps, CompileStats* stats_out) {
  auto eager_model = make_mlp(7, dropout);
  auto compiled_model = make_mlp(7, dropout);
  auto eager_opt = make_opt(*eager_model);
  auto compiled_opt = make_opt(*compiled_model);
  auto eager_step = graph::test_util::classification_step(*eager_model, *eager_opt);
  auto compiled_step =
      compile(graph::test_util::classification_step(*compiled_model, *compiled_opt));
  for (int i = 0; i < steps; ++i) {
    const Batch b = batch(8, static_cast<uint64_t>(i));
    manual_seed(50 + i);
    const Tensor eager_loss = eager_step(b.x, b.y);
    manual_seed(50 + i);
    const Tensor compiled_loss = compiled_step(b.x, b.y);
    ASSERT_EQ(eager_loss.to_vector<float>(), compiled_loss.to_vector<float>()) << "step " << i;
  }
  EXPECT_EQ(flat_params(*eager_model), flat_params(*compiled_model));
  for (std::size_t i = 0; i < eager_model->parameters().size(); ++i) {
    EXPECT_EQ(eager_model->parameters()[i].grad().to_vector<float>(),
              compiled_model->parameters()[i].grad().to_vector<float>());
  }
  if (stats_out != nullptr) *stats_out = compiled_step.stats();
}

TEST(Compile, SgdMomentumStepIsBitIdenticalToEagerAndReplays) {
  CompileStats stats;
  expect_same_training(
      [](nn::Module& m) {
        return std::make_unique<optim::SGD>(m.parameters(),
                                            optim::SGDOptions{.lr = 0.1, .momentum = 0.9});
      },
      0.0, 12, &stats);
  EXPECT_EQ(stats.calls, 12);
  // Step 1 creates the momentum buffers (its graph differs), steps 2 and 3 agree, 4.. replay.
  EXPECT_EQ(stats.traces, 3);
  EXPECT_EQ(stats.replays, 9);
  EXPECT_EQ(stats.graphs, 1);
}

TEST(Compile, AdamWithDropoutIsBitIdenticalToEager) {
  CompileStats stats;
  expect_same_training(
      [](nn::Module& m) {
        return std::make_unique<optim::Adam>(m.parameters(), optim::AdamOptions{.lr = 0.01});
      },
      0.3, 10, &stats);
  EXPECT_GE(stats.replays, 6);
}

TEST(Compile, LearningRateChangesAreReadAtEachReplayWithoutRetracing) {
  auto eager_model = make_mlp(3);
  auto compiled_model = make_mlp(3);
  optim::SGD eager_opt(eager_model->parameters(), {.lr = 0.1});
  optim::SGD compiled_opt(compiled_model->parameters(), {.lr = 0.1});
  auto step = compile([&](const Tensor& x, const Tensor& y) {
    compiled_opt.zero_grad();
    Tensor loss = mse_loss(compiled_model->forward(x), y);
    loss.backward();
    compiled_opt.step();
    return loss;
  });
  for (int i = 0; i < 8; ++i) {
    const double lr = 0.1 / (1 + i);  // a schedule
    eager_opt.set_lr(0, lr);
    compiled_opt.set_lr(0, lr);
    const Tensor x = randn({4, 6}), y = randn({4, 3});
    eager_opt.zero_grad();
    Tensor loss = mse_loss(eager_model->forward(x), y);
    loss.backward();
    eager_opt.step();
    EXPECT_EQ(step(x, y).item<float>(), loss.item<float>());
  }
  EXPECT_EQ(flat_params(*eager_model), flat_params(*compiled_model));
  EXPECT_EQ(step.stats().traces, 2);
  EXPECT_EQ(step.stats().replays, 6);
}

TEST(Compile, ShapeChangeTracesOnceAndKeepsBothGraphs) {
  auto model = make_mlp(1);
  auto f = compile([&](const Tensor& x) { return relu(model->forward(x)).sum(); });
  NoGradGuard no_grad;
  for (int epoch = 0; epoch < 4; ++epoch) {
    for (int64_t n : {8, 8, 5}) {  // a smaller last batch each epoch
      const Tensor x = randn({n, 6});
      EXPECT_EQ(f(x).item<float>(), relu(model->forward(x)).sum().item<float>());
    }
  }
  EXPECT_EQ(f.stats().graphs, 2);
  EXPECT_EQ(f.stats().traces, 4);  // two per shape, in the first two epochs
  EXPECT_EQ(f.stats().replays, 8);
}

TEST(Compile, TrainAndEvalModesKeepTheirOwnGraphs) {
  auto model = make_mlp(2, 0.5);
  auto f = compile([&](const Tensor& x) { return model->forward(x); });
  NoGradGuard no_grad;
  const Tensor x = randn({4, 6});
  for (int round = 0; round < 3; ++round) {
    model->train();
    for (int i = 0; i < 3; ++i) {
      manual_seed(static_cast<uint64_t>(round * 10 + i));
      const std::vector<float> compiled = f(x).to_vector<float>();
      manual_seed(static_cast<uint64_t>(round * 10 + i));
      EXPECT_EQ(compiled, model->forward(x).to_vector<float>());  // a fresh mask each call
    }
    model->eval();
    for (int i = 0; i < 3; ++i)
      EXPECT_EQ(f(x).to_vector<float>(), model->forward(x).to_vector<float>());
  }
  EXPECT_EQ(f.stats().graphs, 2);
  EXPECT_EQ(f.stats().traces, 4);
}

TEST(Compile, AHostReadInsideTheStepFallsBackToEagerWithADiagnostic) {
  auto model = make_mlp(4);
  std::vector<std::string> lines;
  auto f = compile(
      [&](const Tensor& x) {
        Tensor h = model->forward(x);
        if (h.sum().item<float>() > 0) h = relu(h);  // a branch on data
        return h.sum();
      },
      {.on_diagnostic = [&](const std::string& l) { lines.push_back(l); }});
  NoGradGuard no_grad;
  for (int i = 0; i < 4; ++i) {
    const Tensor x = randn({3, 6});
    Tensor h = model->forward(x);
    if (h.sum().item<float>() > 0) h = relu(h);
    EXPECT_EQ(f(x).item<float>(), h.sum().item<float>());
  }
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("host read (item())"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("(sum)"), std::string::npos) << lines[0];
  EXPECT_EQ(f.stats().traces, 1);
  EXPECT_EQ(f.stats().eager_calls, 3);
  EXPECT_EQ(f.stats().replays, 0);
}

TEST(Compile, AValueThatChangesOutsideTheOpsIsNeverBakedIn) {
  double scale = 1.0;
  std::vector<std::string> lines;
  auto f = compile([&](const Tensor& x) { return x * scale; },
                   {.on_diagnostic = [&](const std::string& l) { lines.push_back(l); }});
  const Tensor x = ones({2});
  for (int i = 0; i < 8; ++i) {
    scale = 1.0 + i;
    EXPECT_EQ(f(x).to_vector<float>()[0], static_cast<float>(scale));
  }
  EXPECT_EQ(f.stats().replays, 0);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("constant 0 has other values"), std::string::npos) << lines[0];
}

// An optimizer's load_state_dict puts new state tensors in place of the ones a graph is bound
// to: the next call must retrace, not replay on the old momentum buffers.
TEST(Compile, LoadingOptimizerStateRetracesInsteadOfReplayingStaleState) {
  auto eager_model = make_mlp(5), compiled_model = make_mlp(5);
  optim::SGD eager_opt(eager_model->parameters(), {.lr = 0.1, .momentum = 0.9});
  optim::SGD compiled_opt(compiled_model->parameters(), {.lr = 0.1, .momentum = 0.9});
  auto eager = graph::test_util::classification_step(*eager_model, eager_opt);
  auto compiled = compile(graph::test_util::classification_step(*compiled_model, compiled_opt));
  optim::OptimizerState eager_snapshot, compiled_snapshot;
  for (int i = 0; i < 9; ++i) {
    if (i == 2) {
      eager_snapshot = eager_opt.state_dict();
      compiled_snapshot = compiled_opt.state_dict();
    }
    if (i == 6) {  // back to the momentum of step 2, on both sides
      eager_opt.load_state_dict(eager_snapshot);
      compiled_opt.load_state_dict(compiled_snapshot);
    }
    const Batch b = batch(8, static_cast<uint64_t>(i));
    ASSERT_EQ(eager(b.x, b.y).to_vector<float>(), compiled(b.x, b.y).to_vector<float>())
        << "step " << i;
  }
  EXPECT_EQ(flat_params(*eager_model), flat_params(*compiled_model));
  EXPECT_GE(compiled.stats().graphs, 2);  // one before the load, one after
}

TEST(Compile, PlainArgumentsArePartOfTheKey) {
  auto f = compile([](const Tensor& x, double s) { return x * s; });
  const Tensor x = ones({2});
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(f(x, i % 2 ? 3.0 : 5.0).to_vector<float>()[0], i % 2 ? 3.0f : 5.0f);
  EXPECT_EQ(f.stats().graphs, 2);
  EXPECT_EQ(f.stats().replays, 2);
}

TEST(Compile, RequiresGradChangeOnAParameterRetraces) {
  auto model = make_mlp(5);
  optim::SGD opt(model->parameters(), {.lr = 0.05});
  auto step = compile([&](const Tensor& x, const Tensor& y) {
    opt.zero_grad();
    Tensor loss = mse_loss(model->forward(x), y);
    loss.backward();
    opt.step();
    return loss;
  });
  const Tensor x = randn({4, 6}), y = randn({4, 3});
  for (int i = 0; i < 4; ++i) step(x, y);
  EXPECT_EQ(step.stats().replays, 2);
  // Freeze the first layer: its weight must stop changing, as it would eagerly.
  const Tensor w0 = model->parameters()[0];
  w0.requires_grad_(false);
  const std::vector<float> frozen = w0.to_vector<float>();
  for (int i = 0; i < 4; ++i) step(x, y);
  EXPECT_EQ(w0.to_vector<float>(), frozen);
  EXPECT_EQ(step.stats().replays, 4);  // two traces after the change, then replays again
}

TEST(Compile, BatchArgumentsAndTheirFallback) {
  auto f = compile([](const data::Batch& b) { return b[0] * 2.0; });
  data::Batch tensors(data::TensorList{ones({3})}, 3);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(f(tensors).to_vector<float>()[0], 2.0f);
  EXPECT_EQ(f.stats().replays, 1);
  std::vector<std::string> lines;
  auto g = compile([](const data::Batch& b) { return b.as<Batch>().x * 2.0; },
                   {.on_diagnostic = [&](const std::string& l) { lines.push_back(l); }});
  data::Batch custom(Batch{ones({3}), ones({3})}, 3);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(g(custom).to_vector<float>()[0], 2.0f);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("not a TensorList"), std::string::npos);
}

TEST(Compile, UnknownPassNamesAreRefusedAtCompile) {
  try {
    auto f = compile([](const Tensor& x) { return x; }, {.disable_passes = {"nope"}});
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("no pass named 'nope'"), std::string::npos);
  }
}

}  // namespace
}  // namespace ath
