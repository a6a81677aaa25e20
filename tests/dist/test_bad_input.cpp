// Bad arguments are refused on the caller's thread, before anything is queued, with the
// ordinary error kinds and a message naming the collective and its name. Nothing is submitted,
// so the ranks stay in step (these run under mpirun with the other tests).
#include "dist_test_util.h"
#include "support/expect_error.h"

namespace ath::dist::testing {
namespace {

using ath::testing::expect_error_naming;

TEST(DistBadInput, NonContiguousTensor) {
  Communicator& comm = world();
  Tensor t = zeros({4, 6}).t();
  ASSERT_FALSE(t.is_contiguous());
  EXPECT_THROW(comm.allreduce(t, ReduceOp::Sum, "grads"), ValueError);
  expect_error_naming([&] { comm.allreduce(t, ReduceOp::Sum, "grads"); }, "allreduce 'grads'");
  expect_error_naming([&] { comm.broadcast(t, 0, "weights"); }, "broadcast 'weights'");
  expect_error_naming([&] { comm.send(t, 0, 0, "msg"); }, "send 'msg'");
  expect_error_naming([&] { comm.recv(t, 0, 0, "msg"); }, "recv 'msg'");
  expect_error_naming([&] { comm.allreduce(t, ReduceOp::Sum, "grads"); }, "contiguous");
}

TEST(DistBadInput, WrongDType) {
  Communicator& comm = world();
  Tensor h = zeros({4}, kBFloat16);
  EXPECT_THROW(comm.allreduce(h, ReduceOp::Mean, "bf16_bucket"), DTypeError);
  expect_error_naming([&] { comm.allreduce(h, ReduceOp::Mean, "bf16_bucket"); },
                      "allreduce 'bf16_bucket'");
  expect_error_naming([&] { comm.allreduce(zeros({2}, kBool), ReduceOp::Max, "flags"); }, "bool");
  const int w = comm.world_size();
  expect_error_naming(
      [&] { comm.reduce_scatter(zeros({2}, kFloat64), zeros({2 * w}), ReduceOp::Sum, "rs"); },
      "reduce_scatter 'rs'");
  expect_error_naming([&] { comm.allgather(zeros({w}, kInt64), zeros({1}), "ag"); },
                      "allgather 'ag'");
}

TEST(DistBadInput, MismatchedSizes) {
  Communicator& comm = world();
  const int w = comm.world_size();
  EXPECT_THROW(comm.allgather(zeros({w + 1}), zeros({1}), "gather_sizes"), ShapeError);
  expect_error_naming([&] { comm.allgather(zeros({w * 3 + 1}), zeros({3}), "gather_sizes"); },
                      "allgather 'gather_sizes'");
  EXPECT_THROW(comm.reduce_scatter(zeros({3}), zeros({3 * w + 1}), ReduceOp::Sum, "rs_sizes"),
               ShapeError);
  expect_error_naming(
      [&] { comm.reduce_scatter(zeros({2}), zeros({5 * w}), ReduceOp::Sum, "rs_sizes"); },
      "reduce_scatter 'rs_sizes'");
  // in overlapping out other than as this rank's slice
  Tensor out = zeros({w * 4});
  if (w > 1) {
    Tensor wrong_slice = out.narrow(0, ((comm.rank() + 1) % w) * 4, 4);
    expect_error_naming([&] { comm.allgather(out, wrong_slice, "overlap"); }, "overlaps");
  }
}

TEST(DistBadInput, RanksAndTagsOutOfRange) {
  Communicator& comm = world();
  Tensor t = zeros({3});
  const int w = comm.world_size();
  EXPECT_THROW(comm.broadcast(t, w, "bcast_src"), IndexError);
  expect_error_naming([&] { comm.broadcast(t, -1, "bcast_src"); }, "broadcast 'bcast_src'");
  expect_error_naming([&] { comm.broadcast(t, w, "bcast_src"); }, "src = ");
  expect_error_naming([&] { comm.send(t, w, 0, "to_nowhere"); }, "send 'to_nowhere'");
  expect_error_naming([&] { comm.recv(t, -2, 0, "from_nowhere"); }, "recv 'from_nowhere'");
  EXPECT_THROW(comm.send(t, 0, 40000, "big_tag"), ValueError);
  expect_error_naming([&] { comm.recv(t, 0, -1, "neg_tag"); }, "tag -1");
  expect_error_naming([&] { comm.allreduce(Tensor(), ReduceOp::Sum, "undefined"); },
                      "allreduce 'undefined'");
}

TEST(DistBadInput, EmptyWorkHandle) {
  Work w;
  EXPECT_FALSE(w.defined());
  EXPECT_FALSE(w.is_completed());
  EXPECT_THROW(w.wait(), ValueError);
}

TEST(DistBadInput, StillInStepAfterRefusals) {
  // Nothing above reached the engine: the ranks' next collective pairs up.
  Communicator& comm = world();
  Tensor t = full({2}, 1.0);
  comm.allreduce(t, ReduceOp::Sum, "after_refusals").wait();
  EXPECT_EQ(t.sum().item<double>(), 2.0 * comm.world_size());
}

}  // namespace
}  // namespace ath::dist::testing
