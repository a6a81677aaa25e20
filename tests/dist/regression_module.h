// The TrainingModule the DDP Trainer tests fit: ddp_test_util.h's MLP under a mean-squared-error
// loss and SGD with momentum; optionally followed by a BatchNorm1d converted to SyncBatchNorm (a
// forward that communicates).
#pragma once

#include <memory>

#include "athanor/dist/sync_batch_norm.h"
#include "athanor/nn/batch_norm.h"
#include "athanor/optim/sgd.h"
#include "athanor/train/training_module.h"
#include "ddp_test_util.h"

namespace ath::dist::testing {

class Regression : public train::TrainingModule {
 public:
  explicit Regression(uint64_t seed, bool sync_bn = false)
      : TrainingModule("Regression"), mlp_(seed) {
    register_module("mlp", mlp_);
    if (sync_bn) {
      register_module("norm",
                      std::make_shared<nn::BatchNorm1d>(nn::BatchNormOptions{.features = 4}));
      EXPECT_EQ(convert_sync_batchnorm(*this), 1);
      sync_bn_ = true;
    }
  }
  Tensor forward(const Tensor& x) override {
    Tensor y = mlp_(x);
    // The converted layer replaced the BatchNorm1d: the module's last child.
    return sync_bn_ ? (*children().back())(y) : y;
  }
  Tensor training_step(const data::Batch& batch, int64_t) override {
    return mse_loss(forward(batch[0]), batch[1]);
  }
  train::OptimizerConfig configure_optimizers() override {
    return {
        std::make_shared<optim::SGD>(parameters(), optim::SGDOptions{.lr = 0.1, .momentum = 0.9})};
  }

 private:
  Mlp mlp_;
  bool sync_bn_ = false;
};

}  // namespace ath::dist::testing
