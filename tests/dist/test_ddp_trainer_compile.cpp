// The Trainer with strategy "ddp" and compile = true: forward and backward replay as one graph,
// then every bucket's all-reduce starts (DistributedDataParallel::gradients_ready) and the
// reduction, clipping and optimizer step run eagerly. The compiled fit equals the eager DDP fit
// bit for bit — with and without gradient accumulation — and replays most steps. A model whose
// forward itself communicates (SyncBatchNorm) cannot be a graph: its steps run eagerly, with a
// diagnostic, and still equal the eager fit.
#include <unistd.h>

#include <filesystem>

#include "athanor/data/data.h"
#include "athanor/graph/compile.h"
#include "athanor/optim/sgd.h"
#include "athanor/train/trainer.h"
#include "ddp_test_util.h"
#include "regression_module.h"

namespace ath::dist::testing {
namespace {

namespace fs = std::filesystem;

struct Fit {
  std::vector<Tensor> params;
  int64_t replays = 0;
  int64_t eager_calls = 0;
  std::vector<std::string> diagnostics;
};

Fit fit(bool compile, int64_t accumulate, bool sync_bn) {
  Communicator& comm = world();
  manual_seed(7);
  const auto data = std::make_shared<data::TensorDataset>(
      data::TensorList{randn({128 * comm.world_size(), 8}), randn({128 * comm.world_size(), 4})});
  const fs::path root =
      fs::temp_directory_path() /
      ("athanor_ddp_compile_" + std::to_string(::getpid()) + "_" + std::to_string(comm.rank()));
  fs::remove_all(root);
  Regression model(100 + static_cast<uint64_t>(comm.rank()), sync_bn);  // rank 0's weights win
  train::TrainerOptions o;
  o.max_epochs = 2;
  o.default_root_dir = root.string();
  o.enable_progress_bar = false;
  o.enable_model_summary = false;
  o.enable_checkpointing = false;
  o.logger = false;
  o.num_sanity_val_steps = 0;
  o.strategy = "ddp";
  o.accumulate_grad_batches = accumulate;
  o.compile = compile;
  train::Trainer trainer(o);
  trainer.fit(model, data::make_loader(data, {.batch_size = 16, .shuffle = true, .seed = 3}));
  Fit f;
  for (const Tensor& p : model.parameters()) f.params.push_back(p.clone());
  if (const CompileStats* s = trainer.compile_stats()) {
    f.replays = s->replays;
    f.eager_calls = s->eager_calls;
    f.diagnostics = s->diagnostics;
  }
  comm.barrier("ddp compile fit done").wait();
  fs::remove_all(root);
  return f;
}

void expect_same_bits(const Fit& a, const Fit& b) {
  ASSERT_EQ(a.params.size(), b.params.size());
  for (std::size_t i = 0; i < a.params.size(); ++i) {
    EXPECT_EQ(a.params[i].to_vector<float>(), b.params[i].to_vector<float>()) << "parameter " << i;
  }
}

TEST(DDPTrainerCompile, ReplayedStepsEqualTheEagerFitBitForBit) {
  for (int64_t accumulate : {1, 2}) {
    SCOPED_TRACE(accumulate);
    const Fit eager = fit(false, accumulate, false);
    const Fit compiled = fit(true, accumulate, false);
    expect_same_bits(compiled, eager);
    // 8 batches of 16 per rank and epoch, 2 epochs: all but the traced ones replay.
    EXPECT_GE(compiled.replays, accumulate == 1 ? 14 : 12)
        << ::testing::PrintToString(compiled.diagnostics);
  }
}

TEST(DDPTrainerCompile, AForwardThatCommunicatesRunsEagerly) {
  const Fit eager = fit(false, 1, true);
  const Fit compiled = fit(true, 1, true);
  expect_same_bits(compiled, eager);
  if (world().world_size() > 1) {
    EXPECT_EQ(compiled.replays, 0);
    EXPECT_FALSE(compiled.diagnostics.empty());
  } else {  // a world of one: SyncBatchNorm is BatchNorm, and never communicates
    EXPECT_GE(compiled.replays, 14);
  }
}

// A collective inside a compiled function fails its trace, naming the call: a replay would skip
// it. The function runs eagerly, so the collective still happens on every call.
TEST(DDPTrainerCompile, ACollectiveInsideACompiledStepFailsItsTrace) {
  Communicator& comm = world();
  std::vector<std::string> diagnostics;
  auto step = compile(
      [&](const Tensor& x) {
        Tensor y = x * 2.0;
        comm.allreduce(y, ReduceOp::Sum, "inside the step").wait();
        return y + 1.0;
      },
      {.on_diagnostic = [&](const std::string& d) { diagnostics.push_back(d); }});
  for (int i = 0; i < 3; ++i) {
    const Tensor out = step(full({3}, 1.0));
    EXPECT_EQ(out.to_vector<float>()[0], 2.0f * static_cast<float>(comm.world_size()) + 1.0f);
  }
  EXPECT_EQ(step.stats().replays, 0);
  ASSERT_FALSE(diagnostics.empty());
  EXPECT_NE(diagnostics[0].find("communication: allreduce 'inside the step'"), std::string::npos)
      << diagnostics[0];
}

// DDP over a compiled step directly (as bench/dist/athanor_ddp --compile): each bucket's
// all-reduce starts as the replay completes its gradients (CompileOptions::on_gradient_ready),
// before the replay ends, and the parameters stay bit-identical to the eager loop.
TEST(DDPTrainerCompile, BucketsStartWhileTheReplayStillRuns) {
  Communicator& comm = world();
  auto train = [&](bool compiled) {
    Mlp model(100 + static_cast<uint64_t>(comm.rank()));  // rank 0's weights win
    // Small buckets: several per step (fc2's and fc1's gradients arrive apart).
    DistributedDataParallel ddp(model, {.bucket_cap_bytes = 256, .first_bucket_cap_bytes = 64});
    optim::SGD opt(model.parameters(), {.lr = 0.05});
    auto forward_backward = [&](const Tensor& x, const Tensor& y) {
      opt.zero_grad();
      Tensor loss = mse_loss(ddp(x), y);
      loss.backward();
      return loss;
    };
    Compiled<decltype(forward_backward)> step(
        forward_backward,
        CompileOptions{.on_gradient_ready = [&](const Tensor& p) { ddp.gradient_ready(p); }});
    bool started_inside = false;
    for (int64_t i = 0; i < 6; ++i) {
      auto [x, y] = step_data(i, 8 * comm.world_size());
      x = rows_of(x, 8 * comm.rank(), 8);
      y = rows_of(y, 8 * comm.rank(), 8);
      if (compiled) {
        step(x, y);
        ddp.gradients_ready();  // a no-op once on_gradient_ready began the step
      } else {
        forward_backward(x, y);
      }
      ddp.finish_gradient_sync();
      opt.step();
      if (compiled && i >= 2 && comm.world_size() > 1) {  // a replay (the buckets were rebuilt)
        const DDPStepTiming& t = ddp.timeline().steps().back();
        EXPECT_GE(t.buckets.size(), 2u);
        started_inside = started_inside || t.buckets.front().start < t.backward_end;
      }
    }
    if (compiled) {
      EXPECT_GE(step.stats().replays, 4);
      if (comm.world_size() > 1) {
        EXPECT_TRUE(started_inside);
      }
    }
    std::vector<std::vector<float>> params;
    for (const Tensor& p : model.parameters()) params.push_back(p.to_vector<float>());
    return params;
  };
  EXPECT_EQ(train(true), train(false));
}

}  // namespace
}  // namespace ath::dist::testing
