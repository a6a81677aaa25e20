// Every collective's values against a local reference, for each op and dtype, on whatever world
// the test runs in (1 process, or mpirun -n 2 / -n 3).
#include <thread>

#include "dist_test_util.h"

namespace ath::dist::testing {
namespace {

const DType kReduceDTypes[] = {kFloat32, kFloat64, kInt64, kInt32};
const ReduceOp kOps[] = {ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max, ReduceOp::Min};
const int64_t kSizes[] = {0, 1, 7, 1000};

TEST(DistCollectives, AllreduceEveryOpAndDType) {
  Communicator& comm = world();
  for (DType dtype : kReduceDTypes) {
    for (ReduceOp op : kOps) {
      for (int64_t n : kSizes) {
        SCOPED_TRACE(fmt::format("{} {} n={}", dtype_name(dtype), to_string(op), n));
        Tensor t = rank_tensor(comm.rank(), n, dtype);
        const uint32_t version = t.version();
        comm.allreduce(t, op,
                       fmt::format("allreduce_{}_{}_{}", dtype_name(dtype), to_string(op), n))
            .wait();
        ASSERT_EQ(t.dtype(), dtype);
        std::vector<double> got = as_doubles(t);
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_EQ(got[static_cast<std::size_t>(i)], reduced(op, comm.world_size(), i, dtype))
              << "element " << i;
        }
        if (n > 0 && comm.world_size() > 1) {
          EXPECT_NE(t.version(), version);
        }
      }
    }
  }
}

TEST(DistCollectives, BroadcastFromLastRank) {
  Communicator& comm = world();
  const int src = comm.world_size() - 1;  // rank 1 on two ranks
  for (DType dtype : {kFloat32, kFloat64, kInt64, kBFloat16, kUInt8}) {
    Tensor t = rank_tensor(comm.rank(), 9, kFloat64).abs().to(dtype);
    comm.broadcast(t, src, "broadcast_" + std::string(dtype_name(dtype))).wait();
    EXPECT_EQ(as_doubles(t), as_doubles(rank_tensor(src, 9, kFloat64).abs().to(dtype)));
  }
}

TEST(DistCollectives, AllgatherShapesAndInPlace) {
  Communicator& comm = world();
  const int w = comm.world_size();
  for (int64_t n : kSizes) {
    Tensor in = rank_tensor(comm.rank(), n, kFloat32);
    Tensor out = empty({w, n});  // any shape holding w * n elements
    comm.allgather(out, in, fmt::format("allgather_{}", n)).wait();
    for (int r = 0; r < w; ++r) {
      EXPECT_EQ(as_doubles(out.select(0, r)), as_doubles(rank_tensor(r, n, kFloat32)));
    }
  }
  // In place: `in` is this rank's slice of `out`.
  Tensor out = zeros({w * 5}, kInt64);
  Tensor mine = out.narrow(0, comm.rank() * 5, 5);
  mine.copy_(rank_tensor(comm.rank(), 5, kInt64));
  comm.allgather(out, mine, "allgather_in_place").wait();
  for (int r = 0; r < w; ++r) {
    EXPECT_EQ(as_doubles(out.narrow(0, r * 5, 5)), as_doubles(rank_tensor(r, 5, kInt64)));
  }
}

TEST(DistCollectives, ReduceScatterEveryOp) {
  Communicator& comm = world();
  const int w = comm.world_size();
  for (DType dtype : {kFloat32, kFloat64, kInt64}) {
    for (ReduceOp op : kOps) {
      for (int64_t chunk : {0, 1, 6}) {
        Tensor in = rank_tensor(comm.rank(), w * chunk, dtype).view({w, chunk});
        Tensor out = empty({chunk}, dtype);
        comm.reduce_scatter(out, in, op, fmt::format("reduce_scatter_{}", chunk)).wait();
        std::vector<double> got = as_doubles(out);
        for (int64_t i = 0; i < chunk; ++i) {
          EXPECT_EQ(got[static_cast<std::size_t>(i)],
                    reduced(op, w, comm.rank() * chunk + i, dtype))
              << dtype_name(dtype) << " " << to_string(op) << " element " << i;
        }
      }
    }
  }
}

TEST(DistCollectives, SendRecvRing) {
  Communicator& comm = world();
  const int w = comm.world_size();
  const int next = (comm.rank() + 1) % w, prev = (comm.rank() + w - 1) % w;
  Tensor mine = rank_tensor(comm.rank(), 33, kFloat64);
  Tensor got = empty({33}, kFloat64);
  Work r = comm.recv(got, prev, 7, "ring_recv");  // posted before the send: no deadlock
  Work s = comm.send(mine, next, 7, "ring_send");
  s.wait();
  r.wait();
  EXPECT_EQ(as_doubles(got), as_doubles(rank_tensor(prev, 33, kFloat64)));
}

TEST(DistCollectives, ManyInFlightCompleteInOrder) {
  Communicator& comm = world();
  constexpr int kCalls = 40;
  std::vector<Tensor> tensors;
  std::vector<Work> works;
  for (int k = 0; k < kCalls; ++k) {
    // Mixed sizes: a large one early must not let the small ones after it report first.
    tensors.push_back(full({k % 5 == 0 ? 200000 : 3}, static_cast<double>(comm.rank() + k)));
    works.push_back(comm.allreduce(tensors.back(), ReduceOp::Sum, fmt::format("bucket{}", k)));
  }
  works.push_back(comm.barrier("after_buckets"));
  for (int k = kCalls - 1; k >= 0; --k) {
    // Completion in call order: once call k is complete, every earlier one is.
    if (works[static_cast<std::size_t>(k)].is_completed()) {
      for (int j = 0; j < k; ++j) EXPECT_TRUE(works[static_cast<std::size_t>(j)].is_completed());
    }
  }
  works.back().wait();
  for (int k = 0; k < kCalls; ++k) {
    EXPECT_TRUE(works[static_cast<std::size_t>(k)].test());
    double expect = 0;
    for (int r = 0; r < comm.world_size(); ++r) expect += r + k;
    Tensor& t = tensors[static_cast<std::size_t>(k)];
    EXPECT_EQ(ath::max(t).item<double>(), expect);
    EXPECT_EQ(ath::min(t).item<double>(), expect);
  }
}

TEST(DistCollectives, SubmittedFromSeveralThreadsInAgreedOrder) {
  // Compute threads may submit; the engine thread alone calls MPI. Each rank submits from a
  // worker thread, in the same order on every rank.
  Communicator& comm = world();
  Tensor t = full({4}, 1.0);
  Work w;
  std::thread worker([&] { w = comm.allreduce(t, ReduceOp::Sum, "from_a_thread"); });
  worker.join();
  w.wait();
  EXPECT_EQ(t.sum().item<double>(), 4.0 * comm.world_size());
}

TEST(DistCollectives, BarrierAndRanks) {
  Communicator& comm = world();
  EXPECT_GE(comm.rank(), 0);
  EXPECT_LT(comm.rank(), comm.world_size());
  EXPECT_GE(comm.local_rank(), 0);
  EXPECT_LT(comm.local_rank(), comm.local_size());
  EXPECT_EQ(comm.backend(), launched_by_mpi() ? "mpi" : "single_process");
  comm.barrier("barrier").wait(std::chrono::seconds(10));
  // The ranks agree on the world's size and each rank appears once.
  Tensor ranks = empty({comm.world_size()}, kInt64);
  comm.allgather(ranks, full({1}, static_cast<int64_t>(comm.rank()), kInt64), "ranks").wait();
  EXPECT_EQ(as_doubles(ranks), as_doubles(arange(comm.world_size()).to(kFloat64)));
}

}  // namespace
}  // namespace ath::dist::testing
