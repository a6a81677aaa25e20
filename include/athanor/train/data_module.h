// DataModule: Lightning's LightningDataModule — the data side of a run in one object, so a
// model and its data can be swapped independently.
//
//   #include "athanor/data/data.h"
//   #include "athanor/models/fashion.h"
//   #include "athanor/train/tasks.h"
//   #include "athanor/train/trainer.h"
//   struct FashionData : ath::train::DataModule {
//     std::shared_ptr<data::Subset<data::ImageSample>> train_set_, val_set_;
//     void setup(const std::string& stage) override {  // "fit", "validate", "test", "predict"
//       // the 10000 test images (quicker to load than the 60000 training ones), split 90/10
//       auto images = std::make_shared<data::FashionMNIST>(data::MnistOptions{.train = false});
//       auto parts = data::random_split(images, {0.9, 0.1}, /*seed=*/0);
//       train_set_ = parts[0], val_set_ = parts[1];
//     }
//     std::shared_ptr<data::BatchSource> train_dataloader() override {
//       return data::make_loader(train_set_, {.batch_size = 64, .shuffle = true});
//     }
//     std::shared_ptr<data::BatchSource> val_dataloader() override {
//       return data::make_loader(val_set_, {.batch_size = 256});
//     }
//   };
//   train::ClassificationTask model(models::fashion_mlp(), {.lr = 1e-3});
//   FashionData data;
//   train::Trainer trainer({.max_epochs = 1, .limit_train_batches = 2, .limit_val_batches = 2});
//   trainer.fit(model, data);
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "athanor/data/batch_source.h"

namespace ath::train {

class DataModule {
 public:
  virtual ~DataModule() = default;

  // Download/unpack once (the Trainer calls it before setup).
  virtual void prepare_data() {}
  // stage: "fit", "validate", "test" or "predict".
  virtual void setup(const std::string& /*stage*/) {}
  virtual void teardown(const std::string& /*stage*/) {}

  virtual std::shared_ptr<data::BatchSource> train_dataloader() { return nullptr; }
  virtual std::shared_ptr<data::BatchSource> val_dataloader() { return nullptr; }
  virtual std::shared_ptr<data::BatchSource> test_dataloader() { return nullptr; }
  virtual std::shared_ptr<data::BatchSource> predict_dataloader() { return nullptr; }

  // Saved in checkpoints (and restored on resume).
  virtual nlohmann::json state_dict() const { return nlohmann::json::object(); }
  virtual void load_state_dict(const nlohmann::json& /*state*/) {}

  void save_hyperparameters(nlohmann::json hparams) { hparams_ = std::move(hparams); }
  const nlohmann::json& hparams() const { return hparams_; }

 private:
  nlohmann::json hparams_ = nlohmann::json::object();
};

}  // namespace ath::train
