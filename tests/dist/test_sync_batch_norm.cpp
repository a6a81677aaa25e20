// SyncBatchNorm against one process's BatchNorm on the whole batch: rank r holds rows
// [B r, B r + B) of a global batch that every rank generates, and computes the one-process
// reference locally. Run in a world of one process and under mpirun with 2 ranks.
#include <atomic>

#include "athanor/dist/sync_batch_norm.h"
#include "athanor/nn/batch_norm.h"
#include "athanor/nn/sequential.h"
#include "ddp_test_util.h"
#include "support/expect_error.h"

namespace ath::dist::testing {
namespace {

constexpr int64_t kRowsPerRank = 6;

double max_diff(const Tensor& a, const Tensor& b) {
  return ath::max((a.to(kFloat64) - b.to(kFloat64)).abs()).item<double>();
}

// Counts the collectives that go through it, then hands them to the world.
class CountingCommunicator final : public Communicator {
 public:
  CountingCommunicator() : Communicator(world().options()) {}
  int rank() const override { return world().rank(); }
  int world_size() const override { return world().world_size(); }
  int local_rank() const override { return world().local_rank(); }
  int local_size() const override { return world().local_size(); }
  std::string_view backend() const override { return world().backend(); }
  Work allreduce(const Tensor& t, ReduceOp op, std::string name, CallOptions call) override {
    ++calls;
    return world().allreduce(t, op, std::move(name), call);
  }
  Work broadcast(const Tensor& t, int src, std::string name, CallOptions call) override {
    ++calls;
    return world().broadcast(t, src, std::move(name), call);
  }
  Work allgather(const Tensor& out, const Tensor& in, std::string name, CallOptions call) override {
    ++calls;
    return world().allgather(out, in, std::move(name), call);
  }
  Work reduce_scatter(const Tensor& out, const Tensor& in, ReduceOp op, std::string name,
                      CallOptions call) override {
    ++calls;
    return world().reduce_scatter(out, in, op, std::move(name), call);
  }
  Work barrier(std::string name, CallOptions call) override {
    ++calls;
    return world().barrier(std::move(name), call);
  }
  Work send(const Tensor& t, int dst, int tag, std::string name, CallOptions call) override {
    ++calls;
    return world().send(t, dst, tag, std::move(name), call);
  }
  Work recv(const Tensor& t, int src, int tag, std::string name, CallOptions call) override {
    ++calls;
    return world().recv(t, src, tag, std::move(name), call);
  }
  std::atomic<int> calls{0};
};

// Input [rows, 3, 4, 5] and an upstream gradient of the same shape, the same on every rank.
std::pair<Tensor, Tensor> batch(int64_t rows, uint64_t seed) {
  manual_seed(seed);
  Tensor x = randn({rows, 3, 4, 5}) * 2.0 + 0.5;
  Tensor g = randn({rows, 3, 4, 5});
  return {x, g};
}

// Gives the layers the same non-trivial weight and bias.
void set_affine(nn::BatchNorm& bn) {
  NoGradGuard no_grad;
  bn.weight.detach().copy_(from_vector<float>({0.5f, 1.5f, -2.0f}));
  bn.bias.detach().copy_(from_vector<float>({0.1f, -0.3f, 0.2f}));
}

// Rank r's forward and backward of a SyncBatchNorm on its rows, against BatchNorm2d on all of
// them, for three steps (the running stats move each time). Losses: mean(y * g) over the rank's
// rows, and over all rows for the reference, so DDP's average of the ranks' weight and bias
// gradients is the reference's. The input gradient is, as in PyTorch's SyncBatchNorm, that of
// the sum of the ranks' losses (each rank's backward adds every rank's sums): N times the
// reference's, which DDP's averaging of the layers before it divides back out.
TEST(SyncBatchNorm, RankSharesEqualOneProcessOnTheWholeBatch) {
  Communicator& comm = world();
  const int64_t n = comm.world_size(), r = comm.rank();
  SyncBatchNorm sync({.features = 3});
  nn::BatchNorm2d reference({.features = 3});
  set_affine(sync);
  set_affine(reference);
  for (uint64_t step = 0; step < 3; ++step) {
    auto [x, g] = batch(kRowsPerRank * n, 10 + step);
    Tensor mine = rows_of(x, kRowsPerRank * r, kRowsPerRank).requires_grad_();
    Tensor y = sync(mine);
    (y * rows_of(g, kRowsPerRank * r, kRowsPerRank)).mean().backward();
    Tensor all = x.clone().requires_grad_();
    Tensor y_ref = reference(all);
    (y_ref * g).mean().backward();

    EXPECT_LE(max_diff(y, rows_of(y_ref, kRowsPerRank * r, kRowsPerRank)), 1e-5) << step;
    EXPECT_LE(max_diff(mine.grad(), rows_of(all.grad(), kRowsPerRank * r, kRowsPerRank) *
                                        static_cast<double>(n)),
              1e-5)
        << step;
    Tensor dw = sync.weight.grad().clone(), db = sync.bias.grad().clone();
    comm.allreduce(dw, ReduceOp::Mean, "test dweight").wait();
    comm.allreduce(db, ReduceOp::Mean, "test dbias").wait();
    EXPECT_LE(max_diff(dw, reference.weight.grad()), 1e-5) << step;
    EXPECT_LE(max_diff(db, reference.bias.grad()), 1e-5) << step;
    EXPECT_LE(max_diff(sync.running_mean, reference.running_mean), 1e-5) << step;
    EXPECT_LE(max_diff(sync.running_var, reference.running_var), 1e-5) << step;
    EXPECT_EQ(sync.num_batches_tracked.item<int64_t>(), static_cast<int64_t>(step + 1));
    expect_same_on_all_ranks(comm, sync.running_var, "running_var");
    sync.zero_grad();
    reference.zero_grad();
  }
}

// A world of one: the layer is BatchNorm bit for bit (it runs the same op).
TEST(SyncBatchNorm, WorldOfOneIsBatchNormExactly) {
  if (world().world_size() != 1) GTEST_SKIP() << "needs a world of one process";
  SyncBatchNorm sync({.features = 3});
  nn::BatchNorm2d reference({.features = 3});
  set_affine(sync);
  set_affine(reference);
  for (uint64_t step = 0; step < 3; ++step) {
    auto [x, g] = batch(8, 20 + step);
    Tensor a = x.clone().requires_grad_(), b = x.clone().requires_grad_();
    Tensor ya = sync(a), yb = reference(b);
    (ya * g).sum().backward();
    (yb * g).sum().backward();
    EXPECT_EQ(max_diff(ya, yb), 0.0);
    EXPECT_EQ(max_diff(a.grad(), b.grad()), 0.0);
    EXPECT_EQ(max_diff(sync.weight.grad(), reference.weight.grad()), 0.0);
    EXPECT_EQ(max_diff(sync.bias.grad(), reference.bias.grad()), 0.0);
    EXPECT_EQ(max_diff(sync.running_var, reference.running_var), 0.0);
  }
}

// The group path itself (all-gather of the statistics, the backward node and its all-reduce)
// in whatever world this is, with every rank holding the same rows: it must reproduce the
// batch_norm op on those rows (the statistics of N copies are those of one).
TEST(SyncBatchNorm, GroupPathMatchesTheBatchNormOp) {
  Communicator& comm = world();
  const double n = comm.world_size();
  for (DType dtype : {kFloat32, kFloat64}) {
    auto [x, g] = batch(5, 30);
    x = x.to(dtype);
    g = g.to(dtype);
    Tensor w = from_vector<double>({0.5, 1.5, -2.0}).to(dtype).requires_grad_();
    Tensor b = from_vector<double>({0.1, -0.3, 0.2}).to(dtype).requires_grad_();
    Tensor rm = zeros({3}, dtype), rv = ones({3}, dtype);
    Tensor rm_ref = zeros({3}, dtype), rv_ref = ones({3}, dtype);
    Tensor a = x.clone().requires_grad_(), a_ref = x.clone().requires_grad_();
    Tensor y = sync_batch_norm(a, rm, rv, w, b, 0.1, 1e-5, comm, "test");
    (y * g).sum().backward();
    Tensor dw = w.grad().clone(), db = b.grad().clone();
    w.set_grad(Tensor());
    b.set_grad(Tensor());
    Tensor y_ref = batch_norm(a_ref, rm_ref, rv_ref, w, b, true, 0.1, 1e-5);
    (y_ref * g).sum().backward();
    const double tol = dtype == kFloat64 ? 1e-12 : 1e-6;
    EXPECT_LE(max_diff(y, y_ref), tol * 4);
    // N identical copies: each copy's input gradient is one process's on one copy.
    EXPECT_LE(max_diff(a.grad(), a_ref.grad()), tol * 10);
    // Sums over 100 values of magnitude ~1: float32 rounding allows a little more.
    EXPECT_LE(max_diff(dw, w.grad()), tol * 50);
    EXPECT_LE(max_diff(db, b.grad()), tol * 50);
    EXPECT_LE(max_diff(rm, rm_ref), tol);
    // The running variance is unbiased over the global count n * rows, not the local one.
    const double rows = static_cast<double>(x.numel() / 3), global = rows * n;
    Tensor batch_var_ref = (rv_ref - 0.9) / 0.1;  // unbiased over `rows`
    Tensor expected = batch_var_ref * ((rows - 1) / rows) * (global / (global - 1)) * 0.1 + 0.9;
    EXPECT_LE(max_diff(rv, expected), tol * 4);
  }
}

// Linear -> BatchNorm1d -> ReLU -> Linear under DDP, its BatchNorm converted, against one
// process on the whole batch: the layer before the batch norm trains through its input
// gradient, so this checks that DDP's average and the synchronised backward compose.
struct BnNet : nn::Module {
  explicit BnNet(uint64_t seed) : Module("BnNet") {
    manual_seed(seed);
    fc1 =
        register_module("fc1", std::make_shared<nn::Linear>(nn::LinearOptions{.in = 8, .out = 6}));
    bn = register_module("bn",
                         std::make_shared<nn::BatchNorm1d>(nn::BatchNormOptions{.features = 6}));
    fc2 =
        register_module("fc2", std::make_shared<nn::Linear>(nn::LinearOptions{.in = 6, .out = 4}));
  }
  Tensor forward(const Tensor& x) override { return (*fc2)((*bn)((*fc1)(x)).relu()); }
  std::shared_ptr<nn::Linear> fc1, fc2;
  std::shared_ptr<nn::BatchNorm1d> bn;
};

TEST(SyncBatchNorm, DdpTrainingEqualsOneProcess) {
  Communicator& comm = world();
  const int64_t r = comm.rank();
  BnNet model(200 + static_cast<uint64_t>(r)), reference(200);
  EXPECT_EQ(convert_sync_batchnorm(model), 1);
  DistributedDataParallel ddp(model);
  optim::SGD opt(model.parameters(), {.lr = 0.1, .momentum = 0.9});
  optim::SGD ref_opt(reference.parameters(), {.lr = 0.1, .momentum = 0.9});
  for (int64_t step = 0; step < 20; ++step)
    step_alongside(ddp, opt, reference, ref_opt, step, kRowsPerRank);
  EXPECT_LE(max_abs_param_diff(model, reference), 1e-5);
  EXPECT_LE(max_diff(model.bn->running_mean, reference.bn->running_mean), 1e-5);
  EXPECT_LE(max_diff(model.bn->running_var, reference.bn->running_var), 1e-5);
  BnNet start(200);
  EXPECT_GT(max_abs_param_diff(reference, start), 1e-2);
  // Eval: running statistics, the same on every rank.
  model.eval();
  reference.eval();
  const auto [x, y] = step_data(99, 4);
  EXPECT_LE(max_diff(model(x), reference(x)), 1e-5);
}

TEST(SyncBatchNorm, EvalCommunicatesNothing) {
  CountingCommunicator counting;
  SyncBatchNorm bn({.features = 3}, &counting);
  auto [x, g] = batch(4, 40);
  Tensor a = x.clone().requires_grad_();
  (bn(a) * g).sum().backward();
  // Training: one all-gather forward and one all-reduce backward, when there is a group.
  EXPECT_EQ(counting.calls.load(), counting.world_size() > 1 ? 2 : 0);
  const int before = counting.calls.load();
  bn.eval();
  Tensor b = x.clone().requires_grad_();
  (bn(b) * g).sum().backward();
  EXPECT_EQ(counting.calls.load(), before);
  // Without an input gradient the backward has nothing to all-reduce.
  bn.train();
  const int before_frozen_input = counting.calls.load();
  (bn(x) * g).sum().backward();
  EXPECT_EQ(counting.calls.load(), before_frozen_input + (counting.world_size() > 1 ? 1 : 0));
}

TEST(SyncBatchNorm, ConverterKeepsStateDictKeysAndValues) {
  manual_seed(3);
  nn::Sequential net;
  net.emplace_back<nn::Linear>(nn::LinearOptions{.in = 4, .out = 4});
  net.emplace_back<nn::BatchNorm1d>(nn::BatchNormOptions{.features = 4});
  auto inner_ptr = std::make_shared<nn::Sequential>();
  inner_ptr->emplace_back<nn::BatchNorm2d>(nn::BatchNormOptions{.features = 2});
  net.push_back(inner_ptr);
  {
    NoGradGuard no_grad;
    net.at<nn::BatchNorm1d>(1).running_mean.copy_(from_vector<float>({1, 2, 3, 4}));
  }
  StateDict before;
  for (const auto& [k, v] : net.state_dict()) before.insert(k, v.clone());
  EXPECT_EQ(convert_sync_batchnorm(net), 2);
  EXPECT_EQ(convert_sync_batchnorm(net), 2);  // idempotent
  const StateDict after = net.state_dict();
  ASSERT_EQ(after.size(), before.size());
  EXPECT_EQ(after.keys(), before.keys());
  for (const auto& [k, v] : before) {
    ASSERT_TRUE(after.contains(k)) << k;
    EXPECT_EQ(max_diff(after.at(k), v), 0.0) << k;
  }
  EXPECT_NE(net.at<nn::BatchNorm1d>(1).sync(), nullptr);
  EXPECT_EQ(net.at<nn::BatchNorm1d>(1).type_name(), "BatchNorm1d");
  net.load_state_dict(before);  // and a BatchNorm's state dict loads back
}

TEST(SyncBatchNorm, BadInputNamesTheLayer) {
  SyncBatchNorm bn({.features = 4});
  ath::testing::expect_error_naming([&] { bn(randn({2, 3, 5})); }, "SyncBatchNorm(4)");
  ath::testing::expect_error_naming([&] { bn(randn({2, 3, 5})); }, "4 channels");
  ath::testing::expect_error_naming([&] { bn(randn({4})); }, "SyncBatchNorm(4)");
  nn::BatchNorm2d converted({.features = 4});
  convert_sync_batchnorm(converted);
  ath::testing::expect_error_naming([&] { converted(randn({2, 3, 2, 2})); }, "BatchNorm2d(4)");
  EXPECT_THROW(converted(randn({2, 3, 2, 2})), ShapeError);
  // Nothing was counted or communicated by the refused calls.
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 0);
}

}  // namespace
}  // namespace ath::dist::testing
