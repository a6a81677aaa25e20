// Bad input during fit ends in a clear error, and nothing already written is damaged: a collate
// function that throws (on a worker thread) stops fit with an error naming the batch, while the
// checkpoints and metrics.csv written before stay complete and loadable.
#include <athanor/data/data.h>
#include <athanor/train/callbacks/model_checkpoint.h>
#include <athanor/train/checkpoint.h>
#include <athanor/train/csv_logger.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "io/temp_dir.h"
#include "train/trainer_fixtures.h"

namespace ath::train {
namespace {

namespace fs = std::filesystem;

TEST(TrainerFailures, ThrowingCollateStopsFitAndKeepsEarlierFilesIntact) {
  const fs::path dir = fs::temp_directory_path() / ("athanor_fail_" + std::to_string(getpid()));
  fs::remove_all(dir);
  manual_seed(1);
  Tensor x = randn({64, 4}), y = randn({64, 1});
  auto ds = std::make_shared<data::TensorDataset>(data::TensorList{x, y});
  // A collate that fails on the batch whose first sample is row 40.
  const float row40 = x[40][0].item<float>();
  data::LoaderOptions<data::TensorList> opts{.batch_size = 8, .num_workers = 2};
  opts.collate = [row40](std::vector<data::TensorList>&& samples) -> data::Batch {
    if (samples.front()[0][0].item<float>() == row40) {
      throw ValueError("collate: malformed record");
    }
    return data::default_collate(std::move(samples));
  };
  auto logger = std::make_shared<CSVLogger>((dir / "logs").string());
  TrainerOptions o = testing::quiet_options();
  o.max_epochs = 1;
  o.log_every_n_steps = 1;
  o.loggers = {logger};
  auto mc =
      std::make_shared<ModelCheckpoint>(ModelCheckpointOptions{.dirpath = (dir / "ckpt").string(),
                                                               .save_top_k = 0,
                                                               .save_last = true,
                                                               .every_n_epochs = 0,
                                                               .every_n_train_steps = 1});
  o.callbacks = {mc};
  testing::Regressor m;
  Trainer t(o);
  try {
    t.fit(m, data::make_loader(ds, opts));
    FAIL() << "fit should have stopped";
  } catch (const ValueError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("batch 5"), std::string::npos) << msg;
    EXPECT_NE(msg.find("malformed record"), std::string::npos) << msg;
  }
  // Five good steps were checkpointed; the file is complete and resumes.
  const CheckpointFile ck = load_checkpoint((dir / "ckpt" / "last.ckpt").string());
  EXPECT_EQ(ck.meta.at("global_step").get<int64_t>(), 5);
  // No temporary files left behind by the atomic writers.
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << e.path();
  }
  // metrics.csv holds the five logged steps, whole lines only.
  std::ifstream csv(logger->metrics_file());
  std::string line;
  int rows = 0;
  std::getline(csv, line);
  EXPECT_NE(line.find("train_loss"), std::string::npos) << line;
  while (std::getline(csv, line)) ++rows;
  EXPECT_EQ(rows, 5);
  fs::remove_all(dir);
}

// Data whose shape does not fit the model: the error keeps its type and the layer's words, and
// names the step, the batch and the data file.
TEST(TrainerFailures, DataThatDoesNotFitTheModelNamesTheDataFile) {
  ath::testing::TempDir dir;
  const std::string csv = dir.file("three_features.csv");
  std::ofstream(csv) << "a,b,c,y\n1,2,3,0.5\n4,5,6,1.5\n";
  auto ds = std::make_shared<data::CsvDataset>(
      data::CsvOptions{.path = csv, .target = "y", .target_kind = data::CsvTarget::Float});
  TrainerOptions o = testing::quiet_options();
  o.max_epochs = 1;
  testing::Regressor m;  // Linear(4 -> 1): one feature too many for this file
  for (bool validate : {false, true}) {
    Trainer t(o);
    auto loader = data::make_loader(ds, {.batch_size = 2});
    try {
      if (validate) {
        t.validate(m, loader);
      } else {
        t.fit(m, loader);
      }
      FAIL() << "a [2, 3] batch cannot go through Linear(4 -> 1)";
    } catch (const ShapeError& e) {
      const std::string msg = e.what();
      const std::string step = validate ? "validation_step" : "training_step";
      EXPECT_NE(msg.find(step + " (batch 0 of CsvDataset('" + csv + "')): "), std::string::npos)
          << msg;
      EXPECT_NE(msg.find("linear"), std::string::npos) << msg;
    }
  }
}

}  // namespace
}  // namespace ath::train
