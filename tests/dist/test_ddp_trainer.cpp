// The Trainer with strategy "ddp": every rank's fit equals the one-process fit on the batch
// of all ranks together (the DistributedSampler it inserts gives rank r every n-th sample, so
// the ranks' batches k together are the one-process batch k of n times the size), and only rank
// 0 writes checkpoints and logs. Each rank runs the one-process reference itself.
#include <unistd.h>

#include <filesystem>

#include "athanor/data/data.h"
#include "athanor/train/ddp_strategy.h"
#include "athanor/train/trainer.h"
#include "ddp_test_util.h"
#include "regression_module.h"

namespace ath::dist::testing {
namespace {

namespace fs = std::filesystem;

std::shared_ptr<data::TensorDataset> dataset(int64_t n) {
  manual_seed(7);
  Tensor x = randn({n, 8});
  Tensor y = randn({n, 4});
  return std::make_shared<data::TensorDataset>(data::TensorList{x, y});
}

train::TrainerOptions quiet(const std::string& root) {
  train::TrainerOptions o;
  o.max_epochs = 2;
  o.default_root_dir = root;
  o.enable_progress_bar = false;
  o.enable_model_summary = false;
  o.num_sanity_val_steps = 0;
  return o;
}

int64_t files_under(const fs::path& dir) {
  if (!fs::exists(dir)) return 0;
  int64_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir)) n += e.is_regular_file() ? 1 : 0;
  return n;
}

// batch_size per rank and accumulate_grad_batches: the one-process reference trains on batches
// of batch_size x accumulate x world_size, without accumulation.
void expect_fit_equals_one_process(int64_t batch_size, int64_t accumulate) {
  Communicator& comm = world();
  const int64_t n = comm.world_size();
  const auto data = dataset(256 * n);
  const fs::path root =
      fs::temp_directory_path() /
      ("athanor_ddp_fit_" + std::to_string(::getpid()) + "_rank" + std::to_string(comm.rank()));
  fs::remove_all(root);

  Regression model(100 + static_cast<uint64_t>(comm.rank()));  // rank 0's weights win
  train::TrainerOptions o = quiet(root.string());
  o.strategy = "ddp";
  o.accumulate_grad_batches = accumulate;
  train::Trainer trainer(o);
  ASSERT_EQ(trainer.strategy().name(), "ddp");
  ASSERT_EQ(trainer.strategy().world_size(), n);
  trainer.fit(model,
              data::make_loader(data, {.batch_size = batch_size, .shuffle = true, .seed = 3}));
  EXPECT_EQ(trainer.global_step(), 2 * 256 / (batch_size * accumulate));

  Regression reference(100);
  train::TrainerOptions ro = quiet((root / "reference").string());
  ro.logger = false;
  ro.enable_checkpointing = false;
  train::Trainer ref_trainer(ro);
  ref_trainer.fit(reference, data::make_loader(data, {.batch_size = batch_size * accumulate * n,
                                                      .shuffle = true,
                                                      .seed = 3}));
  EXPECT_EQ(ref_trainer.global_step(), trainer.global_step());
  EXPECT_LE(max_abs_param_diff(model, reference), 1e-6)
      << n << " rank(s), batch " << batch_size << ", accumulate " << accumulate;
  Regression start(100);
  EXPECT_GT(max_abs_param_diff(reference, start), 1e-2);  // training moved the weights

  // Checkpoints and logs: rank 0's only.
  fs::remove_all(root / "reference");
  if (comm.rank() == 0) {
    EXPECT_GT(files_under(root), 0);
    bool checkpoint = false;
    for (const auto& e : fs::recursive_directory_iterator(root)) {
      checkpoint = checkpoint || e.path().string().find("checkpoints") != std::string::npos;
    }
    EXPECT_TRUE(checkpoint) << "no checkpoint under " << root;
  } else {
    EXPECT_EQ(files_under(root), 0) << "rank " << comm.rank() << " wrote under " << root;
  }
  comm.barrier("ddp fit test done").wait();
  fs::remove_all(root);
}

TEST(DDPTrainer, FitEqualsOneProcessOnTheWholeBatch) { expect_fit_equals_one_process(32, 1); }

TEST(DDPTrainer, AccumulationCommunicatesOnceAWindow) { expect_fit_equals_one_process(16, 2); }

TEST(DDPTrainer, InsertsADistributedSampler) {
  Communicator& comm = world();
  auto loader = data::make_loader(dataset(10), {.batch_size = 2, .shuffle = true, .seed = 5});
  train::DDPStrategy strategy;
  strategy.prepare_train_source(*loader);
  auto& base = dynamic_cast<data::detail::LoaderBase&>(*loader);
  if (comm.world_size() == 1) {  // one process: the loader is left as it was
    EXPECT_NE(dynamic_cast<data::RandomSampler*>(&base.sampler()), nullptr);
    return;
  }
  auto* sampler = dynamic_cast<data::DistributedSampler*>(&base.sampler());
  ASSERT_NE(sampler, nullptr);
  EXPECT_EQ(sampler->options().rank, comm.rank());
  EXPECT_EQ(sampler->options().num_replicas, comm.world_size());
  EXPECT_TRUE(sampler->options().shuffle);
  EXPECT_EQ(sampler->options().seed, 5u);
  strategy.prepare_train_source(*loader);  // idempotent
  EXPECT_EQ(&base.sampler(), sampler);
}

TEST(DDPTrainer, UnknownStrategyName) {
  train::TrainerOptions o;
  o.strategy = "fsdp";
  EXPECT_THROW(train::Trainer{o}, ValueError);
}

}  // namespace
}  // namespace ath::dist::testing
