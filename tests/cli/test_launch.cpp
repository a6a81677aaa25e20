// Self-launch: the mpirun command `athanor fit --trainer.devices=N` runs, for one machine and
// for several, and its refusals; and running a command line returns its exit status.
#include <gtest/gtest.h>

#include "athanor/cli/launch.h"
#include "athanor/core/error.h"
#include "support/expect_error.h"

namespace ath::cli {
namespace {

nlohmann::json trainer(int devices, int nodes, nlohmann::json hostfile = nullptr) {
  return {{"devices", devices}, {"num_nodes", nodes}, {"hostfile", std::move(hostfile)}};
}

TEST(Launch, OneProcessNeedsNoLauncher) {
  EXPECT_TRUE(mpirun_command(trainer(1, 1), {"fit"}, {.self = "/x/athanor"}).empty());
}

TEST(Launch, DevicesOnOneMachineShareItsCores) {
  const auto cmd = mpirun_command(trainer(2, 1), {"fit", "--trainer.devices=2"},
                                  {.self = "/x/athanor", .cores = 8, .as_root = true});
  const std::vector<std::string> expected{"mpirun",
                                          "-n",
                                          "2",
                                          "--allow-run-as-root",
                                          "--oversubscribe",
                                          "--bind-to",
                                          "none",
                                          "-x",
                                          "OMP_NUM_THREADS=4",
                                          "/x/athanor",
                                          "fit",
                                          "--trainer.devices=2"};
  EXPECT_EQ(cmd, expected);
  // A count the user set is forwarded, not replaced; more ranks than cores get one thread each.
  const auto forwarded =
      mpirun_command(trainer(3, 1), {"fit"}, {.self = "a", .cores = 2, .omp_threads_set = true});
  EXPECT_NE(std::find(forwarded.begin(), forwarded.end(), "OMP_NUM_THREADS"), forwarded.end());
  const auto one_each = mpirun_command(trainer(3, 1), {"fit"}, {.self = "a", .cores = 2});
  EXPECT_NE(std::find(one_each.begin(), one_each.end(), "OMP_NUM_THREADS=1"), one_each.end());
}

TEST(Launch, SeveralMachinesComeFromTheHostfile) {
  const auto cmd = mpirun_command(trainer(2, 3, "hosts.txt"), {"fit"}, {.self = "a", .cores = 4});
  const std::vector<std::string> expected{
      "mpirun",    "-n",   "6",  "--hostfile",        "hosts.txt", "--map-by", "ppr:2:node",
      "--bind-to", "none", "-x", "OMP_NUM_THREADS=2", "a",         "fit"};
  EXPECT_EQ(cmd, expected);
  testing::expect_error_naming([] { mpirun_command(trainer(1, 2), {"fit"}, {.self = "a"}); },
                               "trainer.num_nodes=2 needs trainer.hostfile");
}

TEST(Launch, ACommandLineReturnsItsExitStatus) {
  EXPECT_EQ(run_command_line({"true"}), 0);
  EXPECT_EQ(run_command_line({"sh", "-c", "exit 3"}), 3);
  EXPECT_EQ(run_command_line({"sh", "-c", "kill -9 $$"}), 128 + 9);
  testing::expect_error_naming([] { run_command_line({"no-such-program-athanor"}); },
                               "cannot start 'no-such-program-athanor'");
}

}  // namespace
}  // namespace ath::cli
