// ZeroRedundancyOptimizer (ZeRO-1) against plain DDP with the same optimizer: every rank trains
// one replica with the optimizer unsharded and one with it sharded, on the same data; the two
// must stay bit-identical, while the sharded one holds about 1/N of the optimizer state. Run in
// a world of one process and under mpirun with 2 ranks.
#include <functional>
#include <memory>

#include "athanor/dist/zero_redundancy_optimizer.h"
#include "athanor/optim/adam.h"
#include "ddp_test_util.h"
#include "support/expect_error.h"

namespace ath::dist::testing {
namespace {

constexpr int64_t kRowsPerRank = 8;

// Four equal Linear layers (272 elements each), so the partition can be exactly balanced.
struct Deep : nn::Module {
  explicit Deep(uint64_t seed) : Module("Deep") {
    manual_seed(seed);
    for (int i = 0; i < 4; ++i) {
      layers.push_back(
          register_module("fc" + std::to_string(i),
                          std::make_shared<nn::Linear>(nn::LinearOptions{.in = 16, .out = 16})));
    }
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = x;
    for (std::size_t i = 0; i < layers.size(); ++i) {
      h = (*layers[i])(h);
      if (i + 1 < layers.size()) h = h.tanh();
    }
    return h;
  }
  std::vector<std::shared_ptr<nn::Linear>> layers;
};

std::pair<Tensor, Tensor> data(int64_t step, int64_t rows) {
  manual_seed(5000 + static_cast<uint64_t>(step));
  return {randn({rows, 16}), randn({rows, 16})};
}

int64_t state_bytes(const optim::Optimizer& opt) {
  int64_t bytes = 0;
  for (std::size_t g = 0; g < opt.num_param_groups(); ++g) {
    for (std::size_t i = 0; i < opt.params(g).size(); ++i) {
      const optim::ParamState& st = opt.state(g, i);
      for (const auto& [name, t] : st.tensors) bytes += static_cast<int64_t>(t.nbytes());
      for (const auto& [name, t] : st.counters) bytes += static_cast<int64_t>(t.nbytes());
    }
  }
  return bytes;
}

using MakeOptimizer = std::function<std::unique_ptr<optim::Optimizer>(const std::vector<Tensor>&)>;

// One step of rank r's share of the global batch through `ddp`.
void backward_step(DistributedDataParallel& ddp, int64_t step) {
  Communicator& comm = world();
  const auto [x, y] = data(step, kRowsPerRank * comm.world_size());
  mse_loss(ddp(rows_of(x, kRowsPerRank * comm.rank(), kRowsPerRank)),
           rows_of(y, kRowsPerRank * comm.rank(), kRowsPerRank))
      .backward();
  ddp.finish_gradient_sync();
}

void expect_equal_to_plain_ddp(const MakeOptimizer& make, const char* what) {
  Communicator& comm = world();
  const int64_t n = comm.world_size();
  Deep plain(300 + static_cast<uint64_t>(comm.rank())), sharded(300);
  DistributedDataParallel plain_ddp(plain), sharded_ddp(sharded);
  auto plain_opt = make(plain.parameters());
  auto sharded_opt = make(sharded.parameters());
  ZeroRedundancyOptimizer zero(*sharded_opt);
  for (int64_t step = 0; step < 30; ++step) {
    plain_opt->zero_grad();
    backward_step(plain_ddp, step);
    plain_opt->step();
    zero.zero_grad();
    backward_step(sharded_ddp, step);
    zero.step();
  }
  EXPECT_EQ(max_abs_param_diff(plain, sharded), 0.0) << what << ": bit-identical to plain DDP";
  Deep start(300);
  EXPECT_GT(max_abs_param_diff(plain, start), 1e-3) << what;
  for (auto& [name, p] : sharded.named_parameters()) expect_same_on_all_ranks(comm, p, name);

  // About 1/N of the state on each rank (the partition is exact here), all of it together.
  const int64_t full = state_bytes(*plain_opt), mine = zero.local_state_bytes();
  EXPECT_GT(full, 0) << what;
  EXPECT_EQ(mine * n, full) << what << ": rank " << comm.rank() << " holds " << mine << " of "
                            << full << " bytes";
  Tensor total = ath::full({1}, mine, kInt64);
  comm.allreduce(total, ReduceOp::Sum, "zero state bytes").wait();
  EXPECT_EQ(total.item<int64_t>(), full) << what;
}

TEST(ZeroRedundancyOptimizer, SgdMomentumEqualsPlainDdp) {
  expect_equal_to_plain_ddp(
      [](const std::vector<Tensor>& ps) {
        return std::make_unique<optim::SGD>(ps, optim::SGDOptions{.lr = 0.05, .momentum = 0.9});
      },
      "SGD");
}

TEST(ZeroRedundancyOptimizer, AdamEqualsPlainDdp) {
  expect_equal_to_plain_ddp(
      [](const std::vector<Tensor>& ps) {
        return std::make_unique<optim::Adam>(ps, optim::AdamOptions{.lr = 1e-2, .amsgrad = true});
      },
      "Adam");
}

TEST(ZeroRedundancyOptimizer, AdamWEqualsPlainDdp) {
  expect_equal_to_plain_ddp(
      [](const std::vector<Tensor>& ps) {
        return std::make_unique<optim::AdamW>(ps, optim::AdamWOptions{.lr = 1e-2});
      },
      "AdamW");
}

TEST(ZeroRedundancyOptimizer, PartitionIsContiguousAndBalanced) {
  Communicator& comm = world();
  Deep model(1);
  optim::SGD opt(model.parameters(), {.lr = 0.1});
  ZeroRedundancyOptimizer zero(opt);
  const std::vector<int64_t> sizes = zero.partition_numel();
  ASSERT_EQ(sizes.size(), static_cast<std::size_t>(comm.world_size()));
  for (int64_t s : sizes) EXPECT_EQ(s, 4 * 272 / comm.world_size());
  for (std::size_t k = 1; k < model.parameters().size(); ++k) {
    EXPECT_LE(zero.owner(k - 1), zero.owner(k));
  }
}

// The consolidated state dict is the plain optimizer's, and loading it resumes exactly.
TEST(ZeroRedundancyOptimizer, ConsolidatedStateDictResumesExactly) {
  Communicator& comm = world();
  Deep plain(400), sharded(400);
  DistributedDataParallel plain_ddp(plain), sharded_ddp(sharded);
  optim::Adam plain_opt(plain.parameters(), {.lr = 1e-2});
  optim::Adam sharded_opt(sharded.parameters(), {.lr = 1e-2});
  ZeroRedundancyOptimizer zero(sharded_opt);
  for (int64_t step = 0; step < 10; ++step) {
    plain_opt.zero_grad();
    backward_step(plain_ddp, step);
    plain_opt.step();
    zero.zero_grad();
    backward_step(sharded_ddp, step);
    zero.step();
  }
  const optim::OptimizerState reference = plain_opt.state_dict();
  optim::OptimizerState saved = zero.consolidated_state_dict();
  EXPECT_EQ(saved.meta, reference.meta);
  ASSERT_EQ(saved.tensors.keys(), reference.tensors.keys());
  for (const auto& [key, t] : reference.tensors) {
    EXPECT_EQ(ath::max((saved.tensors.at(key) - t).abs()).item<double>(), 0.0) << key;
  }
  StateDict saved_tensors;
  for (const auto& [key, t] : saved.tensors) saved_tensors.insert(key, t.clone());
  saved.tensors = saved_tensors;
  const StateDict saved_model = [&] {
    StateDict out;
    for (const auto& [key, t] : sharded.state_dict()) out.insert(key, t.clone());
    return out;
  }();

  for (int64_t step = 10; step < 20; ++step) {
    zero.zero_grad();
    backward_step(sharded_ddp, step);
    zero.step();
  }
  Deep resumed(999);
  resumed.load_state_dict(saved_model);
  DistributedDataParallel resumed_ddp(resumed);
  optim::Adam resumed_opt(resumed.parameters(), {.lr = 1.0});  // the lr comes from the dict
  ZeroRedundancyOptimizer resumed_zero(resumed_opt);
  resumed_zero.load_state_dict(saved);
  EXPECT_EQ(resumed_zero.local_state_bytes(), zero.local_state_bytes());
  EXPECT_EQ(resumed_opt.lr(0), 1e-2);
  for (int64_t step = 10; step < 20; ++step) {
    resumed_zero.zero_grad();
    backward_step(resumed_ddp, step);
    resumed_zero.step();
  }
  EXPECT_EQ(max_abs_param_diff(resumed, sharded), 0.0);
  (void)comm;
}

TEST(ZeroRedundancyOptimizer, BadStateDictIsRefusedByName) {
  Deep model(1);
  optim::Adam opt(model.parameters(), {.lr = 1e-2});
  ZeroRedundancyOptimizer zero(opt);
  optim::OptimizerState bad = opt.state_dict();
  bad.meta["state"]["999"] = nlohmann::json::object();
  ath::testing::expect_error_naming([&] { zero.load_state_dict(bad); }, "Adam");
  bad.meta["state"] = nlohmann::json::object();
  bad.meta["state"]["x"] = nlohmann::json::object();
  EXPECT_THROW(zero.load_state_dict(bad), KeyError);
}

}  // namespace
}  // namespace ath::dist::testing
