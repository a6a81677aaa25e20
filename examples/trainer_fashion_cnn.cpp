// W2 of WORKLOADS.md through the Trainer: the small CNN on Fashion-MNIST, Adam, one
// epoch, then test accuracy. Compare examples/fashion_cnn.cpp, the same as a plain loop.
//
//   ./build/examples/trainer_fashion_cnn [max_steps]
#include <athanor/athanor.h>
#include <athanor/core/thread_policy.h>
#include <athanor/data/data.h>
#include <athanor/models/fashion.h>
#include <athanor/ops/losses.h>
#include <athanor/optim/adam.h>
#include <athanor/train/trainer.h>

ATH_SHORT_OPENMP_SPIN();

using namespace ath;

class FashionCnn : public train::TrainingModule {
 public:
  FashionCnn() : TrainingModule("FashionCnn") { register_module("net", net); }
  Tensor training_step(const data::Batch& b, int64_t) override {
    Tensor loss = cross_entropy((*net)(b[0]), b[1]);
    log("train_loss", loss, {.prog_bar = true});
    return loss;
  }
  void test_step(const data::Batch& b, int64_t) override {
    log("test_acc", eq(argmax((*net)(b[0]), 1), b[1]).to(kFloat32).mean());
  }
  train::OptimizerConfig configure_optimizers() override {
    return {std::make_shared<optim::Adam>(parameters(), optim::AdamOptions{.lr = 1e-3})};
  }
  std::shared_ptr<nn::Sequential> net = models::fashion_cnn();
};

int main(int argc, char** argv) {
  set_num_threads(2);
  auto fashion = [](bool train) {
    return std::make_shared<data::FashionMNIST>(
        data::MnistOptions{.train = train, .mean = 0.2860, .std = 0.3530});
  };
  train::TrainerOptions opts;
  opts.max_epochs = 1;
  opts.max_steps = argc > 1 ? std::stoll(argv[1]) : -1;
  opts.seed = 0;
  opts.default_root_dir = "runs/fashion_cnn";
  train::Trainer trainer(opts);
  FashionCnn model;
  trainer.fit(model, data::make_loader(fashion(true), {.batch_size = 64, .shuffle = true}));
  trainer.test(model, data::make_loader(fashion(false), {.batch_size = 1000}));
}
