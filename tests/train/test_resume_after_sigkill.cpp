// Exact resume after SIGKILL: a child process (this test binary, re-executed with a filter and
// an environment variable) trains with a checkpoint after every optimizer step and is killed at
// a random moment; the parent resumes from the last checkpoint that reached the disk and trains
// to the end. The final weights must equal a straight run's bit for bit — whatever the moment
// of the kill (mid-write included: checkpoints are written atomically).
#include <athanor/train/callbacks/model_checkpoint.h>
#include <athanor/train/checkpoint.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string_view>
#include <thread>

#include "train/trainer_fixtures.h"

extern char** environ;

namespace ath::train {
namespace {

namespace fs = std::filesystem;
constexpr int64_t kSteps = 120;

StateDict train_to(int64_t max_steps, const fs::path& dir, const std::string& ckpt) {
  manual_seed(321);
  testing::Regressor m(0.02, /*dropout=*/true);
  TrainerOptions o = testing::quiet_options();
  o.max_steps = max_steps;
  o.callbacks = {
      std::make_shared<ModelCheckpoint>(ModelCheckpointOptions{.dirpath = dir.string(),
                                                               .save_top_k = 0,
                                                               .save_last = true,
                                                               .every_n_epochs = 0,
                                                               .every_n_train_steps = 1})};
  Trainer t(o);
  t.fit(m, testing::regression_source(7, /*shuffle=*/true, 5), nullptr, ckpt);
  return m.state_dict();
}

// The child's side: runs only when the parent sets ATH_SIGKILL_CHILD_DIR.
TEST(TrainerResumeChild, TrainUntilKilled) {
  const char* dir = std::getenv("ATH_SIGKILL_CHILD_DIR");
  if (dir == nullptr) GTEST_SKIP() << "child half of TrainerResume.SigkillAtRandomMoments";
  train_to(kSteps, dir, "");
}

TEST(TrainerResume, SigkillAtRandomMoments) {
  const fs::path root = fs::temp_directory_path() / ("athanor_sigkill_" + std::to_string(getpid()));
  fs::remove_all(root);
  const auto t0 = std::chrono::steady_clock::now();
  const StateDict straight = train_to(kSteps, root / "straight", "");
  // Kill within the first half of a whole run's duration after the first checkpoint, so most
  // kills land mid-run however fast or loaded the machine is (a fixed 150 ms bound let every
  // child finish first now and then); trials go on until one was killed mid-run (at most 10).
  const auto run_us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  const auto max_delay_us = static_cast<unsigned>(std::max<int64_t>(1000, run_us / 2));
  std::mt19937 rng(std::random_device{}());
  int resumed_mid_run = 0;
  for (int trial = 0; trial < 10 && (trial < 3 || resumed_mid_run == 0); ++trial) {
    const fs::path dir = root / ("trial" + std::to_string(trial));
    fs::create_directories(dir);
    const std::string env_dir = "ATH_SIGKILL_CHILD_DIR=" + dir.string();
    std::vector<char*> envp;
    for (char** e = environ; *e != nullptr; ++e) {
      // The child runs one named case: a shard setting (ATH_TEST_SHARDS) would filter it away.
      if (std::string_view(*e).starts_with("GTEST_")) continue;
      envp.push_back(*e);
    }
    envp.push_back(const_cast<char*>(env_dir.c_str()));
    envp.push_back(nullptr);
    std::string self = fs::read_symlink("/proc/self/exe").string();
    std::string filter = "--gtest_filter=TrainerResumeChild.TrainUntilKilled";
    char* argv[] = {self.data(), filter.data(), nullptr};
    pid_t pid = 0;
    ASSERT_EQ(posix_spawn(&pid, self.c_str(), nullptr, nullptr, argv, envp.data()), 0);
    // Wait for the first checkpoint, then kill at a random moment after it.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!fs::exists(dir / "last.ckpt") && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % max_delay_us));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(fs::exists(dir / "last.ckpt")) << "the child never wrote a checkpoint";
    const int64_t step = load_checkpoint((dir / "last.ckpt").string()).meta["global_step"];
    resumed_mid_run += step < kSteps;
    const StateDict resumed = train_to(kSteps, dir, "last");
    EXPECT_TRUE(testing::bitwise_equal(straight, resumed)) << "killed after step " << step;
  }
  EXPECT_GT(resumed_mid_run, 0) << "every child finished before the kill; the test proved nothing";
  fs::remove_all(root);
}

}  // namespace
}  // namespace ath::train
