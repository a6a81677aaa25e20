// ClassificationTask / LanguageModelTask / make_optimizer: they learn, log Lightning-style keys,
// and reject unknown names.
#include <athanor/nn/embedding.h>
#include <athanor/nn/sequential.h>
#include <athanor/train/callbacks/early_stopping.h>
#include <athanor/train/tasks.h>
#include <gtest/gtest.h>

#include "train/trainer_fixtures.h"

namespace ath::train {
namespace {

// Two Gaussian blobs in 2-D, labels 0/1.
std::shared_ptr<testing::VectorSource> blobs(int n, uint64_t seed) {
  Generator g(seed);
  std::vector<data::Batch> out;
  for (int i = 0; i < n; ++i) {
    Tensor y = randint(0, 2, {16}, {.generator = &g});
    Tensor x = randn({16, 2}, {.generator = &g}) + 3.0 * y.to(kFloat32).unsqueeze(1);
    out.emplace_back(data::TensorList{x, y}, 16);
  }
  return std::make_shared<testing::VectorSource>(std::move(out), true, seed);
}

TEST(Tasks, ClassificationLearnsAndLogsAccuracy) {
  manual_seed(0);
  auto net = std::make_shared<nn::Linear>(nn::LinearOptions{.in = 2, .out = 2});
  ClassificationTask task(net, {.name = "sgd", .lr = 0.5, .scheduler = "onecycle"});
  TrainerOptions o = testing::quiet_options();
  o.max_epochs = 3;
  Trainer t(o);
  t.fit(task, blobs(20, 1), blobs(5, 2));
  EXPECT_EQ(t.global_step(), 60);
  EXPECT_GT(t.callback_metrics().at("val_acc"), 0.9);
  EXPECT_TRUE(t.callback_metrics().count("train_acc"));
  auto r = t.test(task, blobs(5, 3));
  EXPECT_GT(r[0].at("test_acc"), 0.9);
  EXPECT_EQ(task.hparams().at("optimizer"), "sgd");
}

// The tasks name what they log, so a mistyped monitor fails before the first batch; the metric
// names they give are the ones a run really logs.
TEST(Tasks, MonitorsAreCheckedBeforeTheFirstBatch) {
  auto net = std::make_shared<nn::Linear>(nn::LinearOptions{.in = 2, .out = 2});
  ClassificationTask task(net, {.name = "sgd", .lr = 0.5});
  for (const std::string monitor : {"val_los", "val_acc_epoch"}) {
    TrainerOptions o = testing::quiet_options();
    o.max_epochs = 1;
    o.callbacks = {std::make_shared<EarlyStopping>(EarlyStoppingOptions{.monitor = monitor})};
    Trainer t(o);
    try {
      t.fit(task, blobs(4, 1), blobs(2, 2));
      ADD_FAILURE() << "fit accepted monitor " << monitor;
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("EarlyStopping: monitor '" + monitor +
                                           "' is not a metric ClassificationTask logs (it logs "
                                           "train_loss, train_acc, val_loss, val_acc)"),
                std::string::npos)
          << e.what();
    }
    EXPECT_EQ(t.global_step(), 0);
  }
  TrainerOptions o = testing::quiet_options();
  o.max_epochs = 1;
  Trainer t(o);
  t.fit(task, blobs(4, 1), blobs(2, 2));
  for (const std::string& name : task.known_metrics()) {
    EXPECT_TRUE(t.callback_metrics().count(name)) << name;
  }
}

TEST(Tasks, LanguageModelFlattensTokens) {
  manual_seed(0);
  // Next token = current token + 1 (mod 8): an embedding straight to logits learns it.
  auto net = std::make_shared<nn::Embedding>(nn::EmbeddingOptions{.num = 8, .dim = 8});
  LanguageModelTask task(net, {.name = "adam", .lr = 0.1});
  std::vector<data::Batch> batches;
  for (int i = 0; i < 10; ++i) {
    Tensor x = randint(0, 8, {4, 6});
    batches.emplace_back(data::TensorList{x, remainder(x + 1, 8)}, 4);
  }
  TrainerOptions o = testing::quiet_options();
  o.max_epochs = 5;
  Trainer t(o);
  t.fit(task, std::make_shared<testing::VectorSource>(batches));
  EXPECT_LT(t.callback_metrics().at("train_loss"), 0.5);
}

TEST(Tasks, UnknownOptimizerOrScheduler) {
  nn::Linear lin(nn::LinearOptions{.in = 2, .out = 2});
  EXPECT_THROW(make_optimizer(lin.parameters(), {.name = "lamb"}, nullptr), ValueError);
  EXPECT_THROW(make_optimizer(lin.parameters(), {.scheduler = "warmup"}, nullptr), ValueError);
  EXPECT_THROW(make_optimizer(lin.parameters(), {.scheduler = "onecycle"}, nullptr), ValueError);
}

}  // namespace
}  // namespace ath::train
