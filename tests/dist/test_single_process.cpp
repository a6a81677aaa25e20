// The world of one process (no mpirun): MPI is never initialised and every call completes
// locally. Skipped under mpirun.
#include "dist_test_util.h"

namespace ath::dist::testing {
namespace {

class DistSingleProcess : public ::testing::Test {
 protected:
  void SetUp() override {
    if (launched_by_mpi()) GTEST_SKIP() << "launched by mpirun";
  }
};

TEST_F(DistSingleProcess, WorldOfOne) {
  Communicator& comm = world();
  EXPECT_EQ(comm.backend(), "single_process");
  EXPECT_EQ(comm.rank(), 0);
  EXPECT_EQ(comm.world_size(), 1);
  EXPECT_EQ(comm.local_size(), 1);
  EXPECT_EQ(comm.options().timeout, std::chrono::seconds(20));  // as main.cpp set it
  EXPECT_THROW(init({.timeout = std::chrono::seconds(1)}), ValueError);
  EXPECT_EQ(&init({.timeout = std::chrono::seconds(20)}), &comm);
  Tensor t = from_vector<float>({1.5f, -2, 3});
  Work w = comm.allreduce(t, ReduceOp::Mean, "identity");
  EXPECT_TRUE(w.is_completed());
  EXPECT_TRUE(w.test());
  w.wait();
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1.5f, -2, 3}));
}

TEST_F(DistSingleProcess, SendToSelf) {
  Communicator& comm = world();
  Tensor got = zeros({3}, kInt64);
  Work r = comm.recv(got, 0, 2, "self_recv");  // before the send: completes when it comes
  EXPECT_FALSE(r.is_completed());
  comm.send(from_vector<int64_t>({4, 5, 6}), 0, 2, "self_send").wait();
  r.wait();
  EXPECT_EQ(got.to_vector<int64_t>(), (std::vector<int64_t>{4, 5, 6}));
  comm.send(from_vector<int64_t>({7, 8, 9}), 0, 3, "queued").wait();  // send first
  comm.recv(got, 0, 3, "queued_recv").wait();
  EXPECT_EQ(got.to_vector<int64_t>(), (std::vector<int64_t>{7, 8, 9}));
}

TEST_F(DistSingleProcess, RecvWithoutSendTimesOut) {
  Work r = world().recv(zeros({1}), 0, 9, "lonely", {.timeout = std::chrono::milliseconds(50)});
  try {
    r.wait();
    ADD_FAILURE() << "no error";
  } catch (const CommError& e) {
    EXPECT_NE(std::string(e.what()).find("recv 'lonely'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(r.test(), CommError);
}

TEST_F(DistSingleProcess, WaitWithShortTimeoutLeavesTheCallRunning) {
  Communicator& comm = world();
  Tensor got = zeros({1});
  Work r = comm.recv(got, 0, 11, "later");
  EXPECT_THROW(r.wait(std::chrono::milliseconds(10)), CommError);
  EXPECT_FALSE(r.is_completed());
  comm.send(full({1}, 3.0), 0, 11, "now").wait();
  r.wait();
  EXPECT_EQ(got.item<float>(), 3.0f);
}

}  // namespace
}  // namespace ath::dist::testing
