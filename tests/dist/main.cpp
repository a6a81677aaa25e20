// The dist tests' main: the world is initialised before any test (under mpirun every rank runs
// the same tests in the same order, so their collectives pair up). Rank 0 prints gtest's usual
// report; the other ranks print only their failures, prefixed with their rank.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "athanor/dist/dist.h"

namespace {
class FailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (!r.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: failure\n%s\n", rank_,
                 r.file_name() ? r.file_name() : "?", r.line_number(), r.summary());
  }

 private:
  int rank_;
};
}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ath::dist::Communicator& comm = ath::dist::init({.timeout = std::chrono::seconds(20)});
  if (comm.rank() == 0) {
    std::printf("athanor_dist_tests: world of %d (%s)\n", comm.world_size(),
                std::string(comm.backend()).c_str());
  } else {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter(comm.rank()));
  }
  return RUN_ALL_TESTS();
}
