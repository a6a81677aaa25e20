// DistributedDataParallel against the one-process reference: every rank trains on its rows of
// a global batch, and computes locally what one process would on the whole batch. Run in a
// world of one process and under mpirun with 2 ranks.
#include "ddp_test_util.h"
#include "support/expect_error.h"

namespace ath::dist::testing {
namespace {

constexpr int64_t kRowsPerRank = 32;

// Small caps: the MLP's gradients travel in two buckets.
DDPOptions two_buckets() { return {.bucket_cap_bytes = 256, .first_bucket_cap_bytes = 64}; }

TEST(DDP, ParametersAndBuffersComeFromRankZero) {
  Communicator& comm = world();
  Mlp model(100 + static_cast<uint64_t>(comm.rank()));  // different weights on every rank
  Tensor buffer = model.register_buffer("counter", full({3}, static_cast<double>(comm.rank())));
  Mlp rank0(100);
  DistributedDataParallel ddp(model);
  EXPECT_EQ(max_abs_param_diff(model, rank0), 0.0);
  EXPECT_EQ(buffer.to_vector<float>(), (std::vector<float>{0, 0, 0}));
  // Buffers follow rank 0 again at each forward (broadcast_buffers).
  buffer.fill_(static_cast<double>(comm.rank() + 5));
  ddp(randn({2, 8}));
  EXPECT_EQ(buffer.to_vector<float>(), (std::vector<float>{5, 5, 5}));
}

// 50 SGD steps: rank r trains on rows [32r, 32r + 32) of each global batch; the reference
// trains one model on the whole batch of 32 x world_size rows.
TEST(DDP, EquivalentToOneProcessOnTheWholeBatch) {
  Communicator& comm = world();
  const int64_t n = comm.world_size(), r = comm.rank();
  Mlp model(100 + static_cast<uint64_t>(r)), reference(100);
  DistributedDataParallel ddp(model, two_buckets());
  ASSERT_EQ(ddp.buckets().size(), 2u);
  optim::SGD opt(model.parameters(), {.lr = 0.1, .momentum = 0.9});
  optim::SGD ref_opt(reference.parameters(), {.lr = 0.1, .momentum = 0.9});
  for (int64_t step = 0; step < 50; ++step)
    step_alongside(ddp, opt, reference, ref_opt, step, kRowsPerRank);
  const double diff = max_abs_param_diff(model, reference);
  EXPECT_LE(diff, 1e-6) << "after 50 steps on " << n << " rank(s)";
  // The reference moved away from the start (the test would notice a no-op DDP step).
  Mlp start(100);
  EXPECT_GT(max_abs_param_diff(reference, start), 1e-2);
  for (auto& [name, p] : model.named_parameters()) expect_same_on_all_ranks(comm, p, name);
  EXPECT_EQ(ddp.timeline().summary().steps, 50);
}

// Two micro-batches of 16 rows a rank, the first under no_sync(): the same gradients as one
// process on the whole batch, and one synchronised step.
TEST(DDP, NoSyncAccumulatesLocally) {
  Communicator& comm = world();
  const int64_t n = comm.world_size(), r = comm.rank();
  Mlp model(100), reference(100);
  DistributedDataParallel ddp(model, two_buckets());
  optim::SGD opt(model.parameters(), {.lr = 0.1});
  optim::SGD ref_opt(reference.parameters(), {.lr = 0.1});
  for (int64_t step = 0; step < 5; ++step) {
    const auto data = step_data(step, kRowsPerRank * n);
    const Tensor &x = data.first, &y = data.second;  // (lambdas capture no bindings: clang-14)
    opt.zero_grad();
    for (int64_t micro = 0; micro < 2; ++micro) {
      const int64_t start = kRowsPerRank * r + 16 * micro;
      auto run = [&] {
        (mse_loss(ddp(rows_of(x, start, 16)), rows_of(y, start, 16)) / 2.0).backward();
      };
      if (micro == 0) {
        auto guard = ddp.no_sync();
        EXPECT_FALSE(ddp.require_gradient_sync());
        run();
      } else {
        EXPECT_TRUE(ddp.require_gradient_sync());
        run();
      }
    }
    ddp.finish_gradient_sync();
    opt.step();
    ref_opt.zero_grad();
    mse_loss(reference(x), y).backward();
    ref_opt.step();
  }
  EXPECT_LE(max_abs_param_diff(model, reference), 1e-6);
  EXPECT_EQ(ddp.timeline().summary().steps, 5);
}

TEST(DDP, SecondBackwardWithoutFinishIsAnError) {
  Mlp model(100);
  DistributedDataParallel ddp(model);
  ddp(randn({4, 8})).sum().backward();
  ath::testing::expect_error_naming(
      [&] {
        ddp(randn({4, 8})).sum().backward();
      },
      "before finish_gradient_sync()");
  // The wrapper is usable again afterwards.
  model.zero_grad();
  ddp(randn({4, 8})).sum().backward();
  ddp.finish_gradient_sync();
  EXPECT_EQ(ddp.timeline().summary().steps, 1);
}

TEST(DDP, UnusedParameterIsAnErrorNamingIt) {
  Mlp model(100, /*with_extra=*/false, /*with_never=*/true);
  DistributedDataParallel ddp(model, two_buckets());
  ddp(randn({4, 8})).sum().backward();
  try {
    ddp.finish_gradient_sync();
    ADD_FAILURE() << "no error for parameters without a gradient";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("never.weight"), std::string::npos) << msg;
    EXPECT_NE(msg.find("never.bias"), std::string::npos) << msg;
    EXPECT_NE(msg.find("find_unused_parameters"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("fc1.weight"), std::string::npos) << msg;
  }
  // After the error the next step starts clean: with every parameter used, it succeeds.
  model.zero_grad();
  (ddp(randn({4, 8})).sum() + (*model.never)(randn({1, 4})).sum()).backward();
  ddp.finish_gradient_sync();
}

// find_unused_parameters: `extra` is used on rank 0 only, `never` on no rank. Every rank gets
// the mean of the ranks' gradients (zeros where unused); `never` keeps no gradient.
TEST(DDP, FindUnusedParameters) {
  Communicator& comm = world();
  const int64_t n = comm.world_size(), r = comm.rank();
  Mlp model(100, true, true), reference(100, true, true);
  DistributedDataParallel ddp(
      model,
      {.bucket_cap_bytes = 256, .first_bucket_cap_bytes = 64, .find_unused_parameters = true});
  const auto [x, y] = step_data(0, kRowsPerRank * n);
  // The reference: the mean over ranks k of rank k's local gradient.
  std::map<std::string, Tensor> expected;
  for (int64_t k = 0; k < n; ++k) {
    reference.zero_grad();
    reference.use_extra = k == 0;
    mse_loss(reference(rows_of(x, kRowsPerRank * k, kRowsPerRank)),
             rows_of(y, kRowsPerRank * k, kRowsPerRank))
        .backward();
    for (auto& [name, p] : reference.named_parameters()) {
      if (!p.grad().defined()) continue;
      Tensor share = p.grad() / static_cast<double>(n);
      expected[name] = expected.count(name) ? expected[name] + share : share;
    }
  }
  model.use_extra = r == 0;
  mse_loss(ddp(rows_of(x, kRowsPerRank * r, kRowsPerRank)),
           rows_of(y, kRowsPerRank * r, kRowsPerRank))
      .backward();
  ddp.finish_gradient_sync();
  for (auto& [name, p] : model.named_parameters()) {
    if (name.rfind("never.", 0) == 0) {
      EXPECT_FALSE(p.grad().defined()) << name << " is unused on every rank";
      continue;
    }
    ASSERT_TRUE(p.grad().defined()) << name;
    ASSERT_TRUE(expected.count(name)) << name;
    EXPECT_LE(ath::max((p.grad() - expected[name]).abs()).item<double>(), 1e-6) << name;
  }
  EXPECT_TRUE(model.extra->weight.grad().defined());
}

// A world of one process: the gradients stay the tensors backward made (nothing is copied).
TEST(DDP, WorldOfOneCopiesNothing) {
  if (world().world_size() != 1) GTEST_SKIP() << "world of " << world().world_size();
  Mlp model(100);
  DistributedDataParallel ddp(model, two_buckets());
  ddp(randn({4, 8})).sum().backward();
  std::vector<const TensorImpl*> before;
  for (const Tensor& p : model.parameters()) before.push_back(p.grad().impl());
  std::vector<float> values = model.fc1->weight.grad().to_vector<float>();
  ddp.finish_gradient_sync();
  std::size_t i = 0;
  for (const Tensor& p : model.parameters()) EXPECT_EQ(p.grad().impl(), before[i++]);
  EXPECT_EQ(model.fc1->weight.grad().to_vector<float>(), values);
  EXPECT_EQ(ddp.timeline().summary().allreduce_s, 0.0);
}

}  // namespace
}  // namespace ath::dist::testing
