// W1 of WORKLOADS.md through the Trainer: the MLP on Fashion-MNIST, SGD with momentum, one
// epoch, then test accuracy. Compare examples/fashion_mlp.cpp, the same as a plain loop.
//
//   ./build/examples/trainer_fashion_mlp [max_steps]
#include <athanor/athanor.h>
#include <athanor/core/thread_policy.h>
#include <athanor/data/data.h>
#include <athanor/models/fashion.h>
#include <athanor/ops/losses.h>
#include <athanor/optim/sgd.h>
#include <athanor/train/trainer.h>

ATH_SHORT_OPENMP_SPIN();

using namespace ath;

class FashionMlp : public train::TrainingModule {
 public:
  FashionMlp() : TrainingModule("FashionMlp") { register_module("net", net); }
  Tensor training_step(const data::Batch& b, int64_t) override {
    Tensor loss = cross_entropy((*net)(b[0]), b[1]);
    log("train_loss", loss, {.prog_bar = true});
    return loss;
  }
  void test_step(const data::Batch& b, int64_t) override {
    log("test_acc", eq(argmax((*net)(b[0]), 1), b[1]).to(kFloat32).mean());
  }
  train::OptimizerConfig configure_optimizers() override {
    return {
        std::make_shared<optim::SGD>(parameters(), optim::SGDOptions{.lr = 0.1, .momentum = 0.9})};
  }
  std::shared_ptr<nn::Sequential> net = models::fashion_mlp();
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
  opts.default_root_dir = "runs/fashion_mlp";
  train::Trainer trainer(opts);
  FashionMlp model;
  trainer.fit(model, data::make_loader(fashion(true), {.batch_size = 128, .shuffle = true}));
  trainer.test(model, data::make_loader(fashion(false), {.batch_size = 1000}));
}
