// The Trainer's data-parallel extras: log(..., sync_dist = true) reduces across ranks (step
// values when logged, epoch values at the epoch's end), and strategy "ddp_zero1" (sharded
// optimizer state) trains exactly as "ddp" and resumes from its own checkpoints.
#include <unistd.h>

#include <filesystem>

#include "athanor/data/data.h"
#include "athanor/optim/adam.h"
#include "athanor/train/callbacks/model_checkpoint.h"
#include "athanor/train/ddp_strategy.h"
#include "athanor/train/trainer.h"
#include "ddp_test_util.h"

namespace ath::dist::testing {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kBatch = 8, kBatchesPerRank = 4;

// Keeps every call, on the ranks that get them (rank 0 only).
class RecordingLogger : public train::Logger {
 public:
  std::string name() const override { return "recording"; }
  void log_hyperparams(const nlohmann::json&) override {}
  void log_metrics(const train::Metrics& m, int64_t) override { calls.push_back(m); }
  std::vector<train::Metrics> calls;
};

// How training_step steps: automatic optimization, or manual through manual_step() or the
// optimizer's own step().
enum class Stepping { kAutomatic, kManualStep, kOptimizerStep };

class Regression : public train::TrainingModule {
 public:
  explicit Regression(uint64_t seed, bool log_rank_values = false,
                      Stepping stepping = Stepping::kAutomatic)
      : TrainingModule("Regression"),
        mlp_(seed),
        log_rank_values_(log_rank_values),
        stepping_(stepping) {
    register_module("mlp", mlp_);
    set_automatic_optimization(stepping == Stepping::kAutomatic);
  }
  Tensor forward(const Tensor& x) override { return mlp_(x); }
  Tensor training_step(const data::Batch& batch, int64_t batch_idx) override {
    if (log_rank_values_) {
      // Rank r logs (r + 1) (1 + batch_idx): different on every rank.
      const int rank = world().rank();
      const double v = (rank + 1) * (1.0 + static_cast<double>(batch_idx));
      log("synced", v, {.sync_dist = true});
      log("local", v);
      log("synced_epoch", v,
          {.on_step = false, .on_epoch = true, .batch_size = rank + 1, .sync_dist = true});
      log("synced_max", v,
          {.on_step = false, .on_epoch = true, .reduce = train::Reduce::Max, .sync_dist = true});
      log("local_epoch", v, {.on_step = false, .on_epoch = true});
    }
    Tensor loss = mse_loss(forward(batch[0]), batch[1]);
    if (stepping_ == Stepping::kAutomatic) return loss;
    optimizer->zero_grad();
    manual_backward(loss);
    if (stepping_ == Stepping::kManualStep) {
      manual_step();
    } else {
      optimizer->step();
    }
    return loss;
  }
  train::OptimizerConfig configure_optimizers() override {
    optimizer = std::make_shared<optim::Adam>(parameters(), optim::AdamOptions{.lr = 1e-2});
    return {optimizer};
  }
  std::shared_ptr<optim::Adam> optimizer;

 private:
  Mlp mlp_;
  bool log_rank_values_;
  Stepping stepping_;
};

std::shared_ptr<data::TensorDataset> dataset(int64_t n) {
  manual_seed(11);
  return std::make_shared<data::TensorDataset>(data::TensorList{randn({n, 8}), randn({n, 4})});
}

train::TrainerOptions quiet(const fs::path& root, int64_t epochs) {
  train::TrainerOptions o;
  o.max_epochs = epochs;
  o.default_root_dir = root.string();
  o.enable_progress_bar = false;
  o.enable_model_summary = false;
  o.num_sanity_val_steps = 0;
  o.log_every_n_steps = 1;
  return o;
}

// A directory every rank of this run names alike (mpirun is the ranks' common parent).
fs::path shared_root(const std::string& what) {
  return fs::temp_directory_path() / ("athanor_" + what + "_" + std::to_string(::getppid()));
}

TEST(DDPTrainerLogging, SyncDistReducesAcrossRanks) {
  Communicator& comm = world();
  const double n = comm.world_size(), r = comm.rank();
  const fs::path root = shared_root("sync_dist") / std::to_string(comm.rank());
  fs::remove_all(root);
  Regression model(100, /*log_rank_values=*/true);
  train::TrainerOptions o = quiet(root, 1);
  o.strategy = "ddp";
  o.enable_checkpointing = false;
  auto recorder = std::make_shared<RecordingLogger>();
  o.loggers = {recorder};
  train::Trainer trainer(o);
  const auto data = dataset(kBatch * kBatchesPerRank * comm.world_size());
  trainer.fit(model, data::make_loader(data, {.batch_size = kBatch}));

  // Step values: the mean over ranks of (r + 1) (1 + b), i.e. rank 0's value x (n + 1) / 2.
  if (comm.rank() == 0) {
    int checked = 0;
    for (const train::Metrics& m : recorder->calls) {
      if (!m.contains("synced")) continue;
      ASSERT_TRUE(m.contains("local"));
      EXPECT_DOUBLE_EQ(m.at("synced"), m.at("local") * (n + 1) / 2);
      ++checked;
    }
    EXPECT_EQ(checked, kBatchesPerRank);
  } else {
    EXPECT_TRUE(recorder->calls.empty()) << "only rank 0 writes logs";
  }
  const train::Metrics& cb = trainer.callback_metrics();
  const double b = kBatchesPerRank, sum_b = b * (b + 1) / 2;  // sum over batches of (1 + b)
  // Epoch values: the batch-size-weighted mean over every rank's batches (rank r's weight is
  // r + 1), the max over all, and the unsynchronised one is this rank's own.
  double num = 0, den = 0;
  for (int k = 0; k < comm.world_size(); ++k) {
    num += (k + 1) * (k + 1) * sum_b;
    den += (k + 1) * b;
  }
  EXPECT_DOUBLE_EQ(cb.at("synced_epoch"), num / den);
  EXPECT_DOUBLE_EQ(cb.at("synced_max"), n * b);
  EXPECT_DOUBLE_EQ(cb.at("local_epoch"), (r + 1) * sum_b / b);
  EXPECT_DOUBLE_EQ(cb.at("synced"), b * (n + 1) / 2);
  EXPECT_DOUBLE_EQ(cb.at("local"), (r + 1) * b);
  comm.barrier("sync_dist test done").wait();
  fs::remove_all(root);
}

// One strategy's fit of `epochs` epochs from `ckpt`; returns the module.
std::unique_ptr<Regression> fit(const std::string& strategy, int64_t epochs, const fs::path& root,
                                const std::string& ckpt = "",
                                Stepping stepping = Stepping::kAutomatic) {
  Communicator& comm = world();
  auto model =
      std::make_unique<Regression>(100 + static_cast<uint64_t>(comm.rank()), false, stepping);
  train::TrainerOptions o = quiet(root, epochs);
  o.strategy = strategy;
  o.logger = false;
  train::Trainer trainer(o);
  const auto data = dataset(kBatch * kBatchesPerRank * comm.world_size());
  trainer.fit(*model, data::make_loader(data, {.batch_size = kBatch, .shuffle = true, .seed = 9}),
              nullptr, ckpt);
  return model;
}

// Bytes of optimizer state this rank holds.
int64_t state_bytes(const Regression& m) {
  int64_t bytes = 0;
  for (std::size_t i = 0; i < m.optimizer->params(0).size(); ++i)
    for (const auto& [name, t] : m.optimizer->state(0, i).tensors)
      bytes += static_cast<int64_t>(t.nbytes());
  return bytes;
}

// A directory for this test every rank names alike, emptied by rank 0 before any rank uses it.
fs::path fresh_shared_root(const std::string& what) {
  const fs::path root = shared_root(what);
  if (world().rank() == 0) fs::remove_all(root);
  world().barrier(what + " test start").wait();
  return root;
}

TEST(DDPTrainerZero, EqualsDdpAndResumes) {
  Communicator& comm = world();
  const fs::path root = fresh_shared_root("zero_fit");

  auto plain = fit("ddp", 2, root / "plain");
  auto sharded = fit("ddp_zero1", 2, root / "sharded");
  EXPECT_EQ(max_abs_param_diff(*plain, *sharded), 0.0) << "ddp_zero1 is ddp, bit for bit";
  EXPECT_GT(max_abs_param_diff(*plain, Regression(100)), 1e-3);

  // The optimizer's state: about 1/N of it on each rank.
  const int64_t full = state_bytes(*plain), mine = state_bytes(*sharded);
  EXPECT_GT(full, 0);
  EXPECT_LE(mine, full / comm.world_size() + full / 4 / comm.world_size());
  if (comm.world_size() > 1) {
    EXPECT_LT(mine, full);
  }

  // Resume: one epoch sharded, then the second from its checkpoint (full state inside).
  fit("ddp_zero1", 1, root / "first");
  std::string ckpt;
  for (const auto& e : fs::recursive_directory_iterator(root / "first")) {
    if (e.path().extension() == ".ckpt") ckpt = e.path().string();
  }
  ASSERT_FALSE(ckpt.empty()) << "no checkpoint under " << root / "first";
  auto resumed = fit("ddp_zero1", 2, root / "resumed", ckpt);
  EXPECT_EQ(max_abs_param_diff(*resumed, *sharded), 0.0);
  // And the checkpoint of a sharded run resumes an unsharded one, exactly too.
  auto resumed_plain = fit("ddp", 2, root / "resumed_plain", ckpt);
  EXPECT_EQ(max_abs_param_diff(*resumed_plain, *plain), 0.0);
  comm.barrier("zero fit test done").wait();
  if (comm.rank() == 0) fs::remove_all(root);
}

TEST(DDPTrainerZero, ManualOptimizationEqualsAutomatic) {
  // manual_backward leaves the mean over ranks in the gradients, and manual_step under
  // ddp_zero1 is ZeRO's sharded step: both as automatic optimization computes, bit for bit.
  Communicator& comm = world();
  const fs::path root = fresh_shared_root("manual_fit");
  auto automatic = fit("ddp", 1, root / "automatic");
  auto manual = fit("ddp", 1, root / "manual", "", Stepping::kManualStep);
  auto raw_step = fit("ddp", 1, root / "raw", "", Stepping::kOptimizerStep);
  auto sharded = fit("ddp_zero1", 1, root / "sharded", "", Stepping::kManualStep);
  EXPECT_EQ(max_abs_param_diff(*automatic, *manual), 0.0);
  EXPECT_EQ(max_abs_param_diff(*automatic, *raw_step), 0.0);
  EXPECT_EQ(max_abs_param_diff(*automatic, *sharded), 0.0);
  if (comm.world_size() > 1) {
    EXPECT_LT(state_bytes(*sharded), state_bytes(*manual)) << "manual_step shards the state";
  }
  comm.barrier("manual fit test done").wait();
  if (comm.rank() == 0) fs::remove_all(root);
}

// A DDP fit with the default loggers, from `ckpt`; returns the module and the checkpoint it
// restored (Trainer::restored_checkpoint()).
std::pair<std::unique_ptr<Regression>, std::string> fit_logged(int64_t epochs, const fs::path& root,
                                                               const std::string& ckpt = "",
                                                               int64_t save_top_k = 1) {
  Communicator& comm = world();
  auto model = std::make_unique<Regression>(100 + static_cast<uint64_t>(comm.rank()));
  train::TrainerOptions o = quiet(root, epochs);
  o.strategy = "ddp";
  o.callbacks = {std::make_shared<train::ModelCheckpoint>(
      train::ModelCheckpointOptions{.save_top_k = save_top_k})};
  train::Trainer trainer(o);
  const auto data = dataset(kBatch * kBatchesPerRank * comm.world_size());
  trainer.fit(*model, data::make_loader(data, {.batch_size = kBatch, .shuffle = true, .seed = 9}),
              nullptr, ckpt);
  return {std::move(model), trainer.restored_checkpoint()};
}

// The one checkpoint under `dir` (on any rank: the ranks share this machine's disk).
std::string only_checkpoint(const fs::path& dir) {
  std::vector<std::string> found;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.path().extension() == ".ckpt") found.push_back(e.path().string());
  }
  EXPECT_EQ(found.size(), 1u) << dir;
  return found.empty() ? std::string() : found.front();
}

// ckpt_path "last" and "best" name rank 0's checkpoints: only rank 0 writes them, under its
// logger's version_N directory, while the other ranks (no loggers) have the bare
// default_root_dir for their log_dir and would find nothing there (or, on another machine,
// nothing at all). Rank 0 resolves them and every rank restores that file; the resumed fit then
// equals the uninterrupted one, bit for bit.
TEST(DDPTrainerResume, LastAndBestFindRankZerosCheckpointsOnEveryRank) {
  Communicator& comm = world();
  const fs::path root = fresh_shared_root("resume_last_best");
  auto whole = fit_logged(2, root / "whole").first;
  // "last": one epoch (its checkpoint alone), then a new Trainer resumes the second.
  const fs::path run = root / "last";
  fit_logged(1, run);
  const std::string saved = only_checkpoint(run);
  ASSERT_NE(saved.find("version_0"), std::string::npos) << saved;
  auto [resumed, restored] = fit_logged(2, run, "last");
  EXPECT_EQ(restored, saved) << "rank " << comm.rank();
  EXPECT_EQ(max_abs_param_diff(*resumed, *whole), 0.0) << "last, rank " << comm.rank();
  // "best": the best path recorded in the newest checkpoint's ModelCheckpoint state (a
  // checkpoint names itself when it is the best), read by rank 0 only. One epoch (save_top_k 1
  // keeps its checkpoint alone), then a new Trainer resumes the second from it and keeps it.
  const fs::path best_run = root / "best";
  fit_logged(1, best_run);
  const std::string best_saved = only_checkpoint(best_run);
  auto [from_best, best] = fit_logged(2, best_run, "best");
  EXPECT_EQ(best, best_saved) << "rank " << comm.rank();
  EXPECT_TRUE(fs::exists(best_saved)) << "the checkpoint resumed from was deleted";
  EXPECT_EQ(max_abs_param_diff(*from_best, *whole), 0.0) << "best, rank " << comm.rank();
  // Nothing to resume: every rank fails with rank 0's reason (none waits for the others).
  std::string msg;
  try {
    fit_logged(1, root / "empty", "last");
    ADD_FAILURE() << "resumed from nothing";
  } catch (const IOError& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("no checkpoint was found"), std::string::npos) << msg;
  if (comm.rank() > 0) {
    EXPECT_NE(msg.find("rank 0 could not resolve ckpt_path=\"last\""), std::string::npos) << msg;
  }
  comm.barrier("resume last/best test done").wait();
  if (comm.rank() == 0) fs::remove_all(root);
}

TEST(DDPTrainerZero, StrategyNames) {
  train::TrainerOptions o;
  o.strategy = "ddp_zero1";
  train::Trainer trainer(o);
  EXPECT_EQ(trainer.strategy().name(), "ddp_zero1");
  EXPECT_THROW(train::DDPStrategy({}, 2), ValueError);
}

}  // namespace
}  // namespace ath::dist::testing
